"""`nullius host run`, start to end: refuse early, send the snapshot once, set the host up once, launch, mirror until it ends.

Everything that can be refused is refused before anything is sent: the
recipe, a job of that name here, the host's key, what the host lacks, a
value that would be in the snapshot. Then the snapshot goes (when the host
has not got it), the host sets up its environment (once a snapshot), and the
run starts there, detached from the connection. This side then mirrors the
job back every 10 s, and once more when it has ended; SIGINT (Ctrl-C, the
app's cancel) is sent on to the run there, whose end is mirrored as any
other. A connection that drops costs a mirror, not the run: the next one
picks it up, and `nullius host mirror JOB` does after this process is gone.
"""

from __future__ import annotations

import json
import secrets
import shutil
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import attrs

from nullius_core.definitions import DefinitionError
from nullius_core.jobs.records import iso, utcnow
from nullius_core.paths import Paths
from nullius_core.recipes import RecipeProblem, job_named, read

from nullius_app.host import handover, probe, snapshot, ssh
from nullius_app.host.mirror import HOST_FILE, Mirrored, mirror_once, remote_program
from nullius_app.host.ssh import Host, HostRefused

MIRROR_EVERY = 10.0
UV_VERSION = "0.13.9"  # the uv Nullius pins (the docker backend's dependency): installed on a host that has none
CANCELLED = 130

# $1: the snapshot's content id. The tar stream on stdin lands beside its place, and is renamed into it once whole.
RECEIVE = r"""
set -e
mkdir -p "$HOME/.nullius/app"
cd "$HOME/.nullius/app"
if [ -f "$1/snapshot.json" ]; then cat >/dev/null; echo present; exit 0; fi
part=$(mktemp -d "$1.part.XXXXXX")
if tar -xzf - -C "$part" && [ -f "$part/snapshot.json" ]; then
  if mv -T "$part" "$1" 2>/dev/null; then echo sent; else rm -rf "$part"; echo present; fi
else
  rm -rf "$part"; echo "the snapshot did not arrive whole" >&2; exit 3
fi
"""


def say(stage: str, **fields: Any) -> None:
    """A progress line on stderr, as the core's: `[nullius] stage=host-... key=value`."""
    parts = [f"stage={stage}"] + [f"{k}={_plain(v)}" for k, v in fields.items() if v is not None]
    print("[nullius] " + " ".join(parts), file=sys.stderr, flush=True)


def _plain(value: Any) -> str:
    text = str(value)
    return json.dumps(text) if not text or any(c in text for c in ' "=') else text


def send(host: Host, snap: snapshot.Snapshot) -> dict[str, Any]:
    """The snapshot into the host's ~/.nullius/app/<id>, as a gzipped tar over the connection; what it took."""
    import io
    import subprocess

    started = time.monotonic()
    archive = io.BytesIO()
    snap.write_tar(archive)  # a few MB at most: made whole, then sent
    proc = ssh.popen(host, ["sh", "-c", RECEIVE, "receive", snap.id], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE)
    out, err = proc.communicate(archive.getvalue(), timeout=ssh.CALL_SECONDS)
    if proc.returncode == 255:
        raise HostRefused(ssh.explain(host, err.decode(errors="replace")))
    if proc.returncode != 0:
        raise HostRefused(f"{host.name}: the snapshot could not be put there: {err.decode(errors='replace').strip()[-800:]}")
    return {"sent": out.decode().strip() == "sent", "wire_bytes": len(archive.getvalue()), "send_seconds": round(time.monotonic() - started, 3)}


def _remote(host: Host, python: str, snap_id: str, *args: str, stdin: bytes | None = None) -> dict[str, Any]:
    done = ssh.run(host, [python, remote_program(snap_id), *args], stdin=stdin, seconds=3600)
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip()
        raise HostRefused(f"{host.name}: {args[0]} failed: {said[-1500:] or 'no word'}")
    return json.loads(done.stdout.decode().strip().splitlines()[-1])


def _recipe(path: Path, job_name: str | None, given: Host | None) -> tuple[Any, dict[str, Any], Any, Host]:
    """The recipe (read strictly), its raw form, the job asked, and the host: the recipe's or the one given, never two."""
    try:
        recipe = read(path, "run")
    except RecipeProblem as exc:
        raise HostRefused(str(exc)) from None
    except DefinitionError as exc:
        raise HostRefused(f"the recipe is invalid:\n{exc.render()}") from None
    try:
        job = job_named(recipe, job_name, path)
    except RecipeProblem as exc:
        raise HostRefused(str(exc)) from None
    if given is None:
        if not recipe.host:
            raise HostRefused(f"{path} names no host: give USER@HOST, or set the recipe's \"host\"")
        given = Host(destination=recipe.host)
    elif recipe.host and recipe.host != given.destination:
        raise HostRefused(f"{path} runs on {recipe.host}, not {given.destination}: the recipe says where it runs")
    return recipe, json.loads(path.read_text()), job, _with_login(given, recipe.ssh)


def _with_login(host: Host, login: Any) -> Host:
    """The host with the recipe's `ssh` (port, key, known_hosts) where the command line gave none of its own."""
    if login is None:
        return host
    return attrs.evolve(host, port=host.port or login.port,
                        identity=host.identity or (Path(login.identity) if login.identity else None),
                        known_hosts=host.known_hosts or (Path(login.known_hosts) if login.known_hosts else None))


def run(given: Host | None, recipe_path: Path, job_name: str | None, jobs_dir: Path, plugin_options: tuple[str, ...]) -> dict[str, Any]:
    """The job run on the host and mirrored here; what happened, with what each step took (the exit status under `code`)."""
    recipe, raw, job, host = _recipe(recipe_path, job_name, given)
    local = jobs_dir / job.name
    if local.exists():
        raise HostRefused(f"{local} exists already: choose another job name (nothing was sent)")
    paths = Paths.from_env()
    loaded = handover.loaded(plugin_options)
    hand = handover.prepare(recipe, raw, paths, loaded.providers)
    snap = snapshot.running(loaded.distributions, paths)
    found = snap.holding(hand.values())
    if found:
        raise HostRefused(f"the snapshot would hold a value that goes over stdin ({', '.join(found)}): remove it from there first")
    say("host-snapshot", id=snap.id, files=len(snap.items), bytes=snap.size, seconds=round(snap.seconds, 3))
    facts = probe.probe(host, snap.id, docker=recipe.backend == "docker")
    problems = facts.problems(recipe.backend)
    if problems:
        raise HostRefused("; ".join(problems))
    python = facts.get("python3")
    report: dict[str, Any] = {"job": str(local), "host": host.name, "snapshot": {"id": snap.id, "files": len(snap.items),
                              "bytes": snap.size, "make_seconds": round(snap.seconds, 3)}}
    if host.accept_new:
        say("host-key", host=host.name, key=ssh.fingerprint(host) or "not found", known_hosts=str(host.known_hosts or "~/.ssh/known_hosts"))
    if facts.get("snapshot") == "present":
        report["snapshot"].update(sent=False, why="the host has it")
        say("host-send", id=snap.id, state="present", sent="no")
    else:
        report["snapshot"].update(send(host, snap))
        say("host-send", id=snap.id, state="done", wire_bytes=report["snapshot"]["wire_bytes"], seconds=report["snapshot"]["send_seconds"])
    say("host-setup", host=host.name, state="start" if facts.get("venv") != "ready" else "cached", uv=facts.get("uv") or "absent")
    report["setup"] = _remote(host, python, snap.id, "setup", snap.id, UV_VERSION)
    say("host-setup", host=host.name, state="done", **{k: v for k, v in report["setup"].items() if k != "uv_path"})
    run_id = f"{job.name}-{secrets.token_hex(4)}"
    if local.exists():
        raise HostRefused(f"{local} appeared here while the host was set up: nothing was started")
    started = _remote(host, python, snap.id, "launch", snap.id, run_id, stdin=hand.message(job.name))
    local.mkdir(parents=True)
    record = {"host": host.record(), "python": python, "snapshot": snap.id, "run": run_id, "job": job.name,
              "backend": recipe.backend, "handed": hand.names, "started": iso(utcnow())}
    (local / HOST_FILE).write_text(json.dumps(record, indent=2) + "\n")
    say("host-run", host=host.name, run=run_id, pid=started["pid"], job=str(local), handed=",".join(hand.names) or "nothing")
    report.update(run=run_id, **follow(host, python, snap.id, run_id, local))
    return report


def follow(host: Host, python: str, snap_id: str, run_id: str, local: Path, once: bool = False) -> dict[str, Any]:
    """Mirror the run's job every MIRROR_EVERY s until it has ended there (and once more); SIGINT is sent on to it."""
    asked = threading.Event()
    sent = False
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, lambda *_: asked.set())
    mirrors: list[dict[str, Any]] = []
    offset = 0
    try:
        while True:
            if asked.is_set() and not sent:
                sent = _cancel(host, python, snap_id, run_id)
            try:
                done: Mirrored = mirror_once(host, python, snap_id, run_id, local, offset)
            except HostRefused as exc:
                say("host-mirror", state="failed", reason=str(exc), then="the run there goes on; trying again")
            else:
                offset = done.log_offset
                if done.log:
                    sys.stderr.write(done.log)
                    sys.stderr.flush()
                mirrors.append({"seconds": round(done.seconds, 3), "files": done.files, "bytes": done.bytes})
                say("host-mirror", state=done.state.get("state"), files=done.files, bytes=done.bytes, seconds=round(done.seconds, 3),
                    links_not_made=",".join(done.links_not_made) or None)
                if done.ended and not done.entries and [p.name for p in local.iterdir()] == [HOST_FILE]:
                    shutil.rmtree(local)  # as a run refused here leaves no job folder
                    say("host-job", state="none", job=str(local), why="the run there made no job: its lines above say why")
                if done.ended or once:
                    return _end(done, mirrors)
            asked.wait(MIRROR_EVERY)
    finally:
        signal.signal(signal.SIGINT, previous)


def _cancel(host: Host, python: str, snap_id: str, run_id: str) -> bool:
    try:
        answer = _remote(host, python, snap_id, "cancel", run_id)
    except HostRefused as exc:
        say("host-cancel", state="failed", reason=str(exc), then="trying again at the next mirror")
        return False
    say("host-cancel", state="sent" if answer.get("sent") else "not running", signal="SIGINT")
    return True


def _end(done: Mirrored, mirrors: list[dict[str, Any]]) -> dict[str, Any]:
    state = done.state
    if state.get("state") == "lost":
        say("host-done", state="lost", reason=state.get("why"))
        return {"state": "lost", "code": 1, "mirrors": mirrors}
    if state.get("state") != "ended":
        return {"state": state.get("state"), "code": None, "mirrors": mirrors}
    say("host-done", state="ended", code=state.get("code"))
    return {"state": "ended", "code": state.get("code"), "mirrors": mirrors}


def record_of(job: Path) -> dict[str, Any]:
    """Where a job mirrored from a host runs (its .nullius-host.json)."""
    try:
        return json.loads((job / HOST_FILE).read_text())
    except FileNotFoundError:
        raise HostRefused(f"{job} is not a job run on a host (no {HOST_FILE} in it)") from None
    except ValueError as exc:
        raise HostRefused(f"{job / HOST_FILE}: not readable JSON ({exc})") from None


def follow_again(job: Path, once: bool) -> dict[str, Any]:
    """`nullius host mirror JOB`: the run on the host followed from its record here, as `host run` would have."""
    record = record_of(job)
    return follow(Host.from_record(record["host"]), record["python"], record["snapshot"], record["run"], job, once=once)


def cancel_again(job: Path) -> bool:
    record = record_of(job)
    return _cancel(Host.from_record(record["host"]), record["python"], record["snapshot"], record["run"])
