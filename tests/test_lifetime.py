"""Nothing a run starts outlives it: a SIGKILLed run's agents, their children and escapees end; --resume checks; stderr capped."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_agent_runs import KEY, _catalogue as catalogue, leftovers, run_agent, trials

from nullius_core.testing import run_cli

GONE_WITHIN = 120.0  # generous: the watcher ends them in well under a second


@pytest.fixture
def env(nullius_env, tmp_path, fake_model):
    return {**nullius_env, "NULLIUS_CATALOGUE": str(catalogue(tmp_path)), "NULLIUS_JOBS_DIR": str(tmp_path / "jobs"), "OPENAI_COMPATIBLE_API_KEY": KEY}


def _stat(pid: int) -> tuple[int, str, int] | None:
    """(ppid, state, start time) of a process, None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return int(fields[1]), fields[0], int(fields[19])


def identity(pids) -> dict[int, int]:
    """pid -> start time, so that a reused pid is not taken for the same process."""
    out = {}
    for pid in pids:
        stat = _stat(pid)
        if stat is not None:
            out[pid] = stat[2]
    return out


def living(known: dict[int, int]) -> list[str]:
    out = []
    for pid, start in known.items():
        stat = _stat(pid)
        if stat is not None and stat[1] != "Z" and stat[2] == start:
            try:
                command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(bytes(1), b" ").decode(errors="replace").strip()
            except OSError:
                command = "(gone while named)"
            out.append(f"{pid} {command}")
    return out


def descendants(root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _stat(int(entry))
            if stat is not None:
                children.setdefault(stat[0], []).append(int(entry))
    found, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def wait_for(predicate, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"not within {seconds:g} s: {what}")


def orphan_files(job: Path) -> list[Path]:
    return sorted(job.glob("*/.work/workspace/orphans.txt"))


def test_a_killed_run_leaves_no_process_behind(env, fake_model, tmp_path):
    args = [sys.executable, "-m", "nullius_core", "run", "faulty", "scripted", "--model", "fake-1", "--provider", "openai-compatible",
            "--base-url", fake_model.openai_base_url, "--unsandboxed", "--option", "mode=orphans", "--limit", "2", "-j", "2", "--job-name", "k"]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    job = tmp_path / "jobs" / "k"
    try:
        files = wait_for(lambda: len(orphan_files(job)) == 2 and orphan_files(job), 600, "both agents wrote orphans.txt")
        left = [int(p) for f in files for p in f.read_text().split()]
        known = identity(descendants(proc.pid) | set(left))  # drivers, agents, their children, and the escapees
        scratch = {folder for folder in map(cwd_of, known) if folder is not None and folder.name.startswith("nullius-driver-")}
    finally:
        proc.kill()  # no handler runs: as if the machine died
        proc.wait(timeout=30)
    assert len(left) == 8 and set(left) <= set(known)
    assert len(known) >= 10  # the two drivers too
    assert len(scratch) == 1 and all(folder.is_dir() for folder in scratch)  # the drivers' working folder, outside the job
    deadline = time.monotonic() + GONE_WITHIN
    while (living(known) or any(folder.exists() for folder in scratch)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert living(known) == []
    assert not any(folder.exists() for folder in scratch)  # removed by the run's watcher, the run being gone


def test_a_killed_run_leaves_no_bwrap_sandbox_behind(env, fake_model, tmp_path):
    """The scripted agent's orphans (TERM-deaf, in a session of their own, double-forked out of its tree) in two sandboxes."""
    from nullius_plugins.bwrap_backend import kernel

    missing = kernel.missing()
    if missing is not None:
        pytest.skip(f"this machine cannot make the bwrap backend's sandbox: {missing}")
    args = [sys.executable, "-m", "nullius_core", "run", "faulty", "scripted", "--model", "fake-1", "--provider", "openai-compatible",
            "--base-url", fake_model.openai_base_url, "--backend", "bwrap", "--option", "mode=orphans", "--limit", "2", "-j", "2",
            "--job-name", "kb"]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    job = tmp_path / "jobs" / "kb"
    try:
        files = wait_for(lambda: len(orphan_files(job)) == 2 and orphan_files(job), 600, "both agents wrote orphans.txt")
        inside = [len(f.read_text().split()) for f in files]  # pids of the sandboxes' own namespaces: not this machine's
        known = identity(descendants(proc.pid))  # the sandboxes' processes are all the run's descendants here, escapees too
        sleeps = [pid for pid in known if any(f"sleep {n}" in " ".join(living({pid: known[pid]})) for n in (601, 602, 603))]
    finally:
        proc.kill()  # no handler runs: as if the machine died
        proc.wait(timeout=30)
    assert inside == [4, 4] and len(sleeps) == 6, living(known)
    deadline = time.monotonic() + GONE_WITHIN
    while living(known) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert living(known) == []


def cwd_of(pid: int) -> Path | None:
    try:
        return Path(os.readlink(f"/proc/{pid}/cwd"))
    except OSError:
        return None


def test_a_run_ends_what_its_agent_left_out_of_its_group_too(env, fake_model, tmp_path):
    """Agents that hang past their turn limit (3 s here) and leave processes: each unit times out, is scored, and nothing is left."""
    started = time.monotonic()
    short = {**env, "NULLIUS_CATALOGUE": str(catalogue(tmp_path, turn_seconds=3))}  # the agent times out
    result = run_agent(short, fake_model, "orphans", "--limit", "2", "--job-name", "o")
    assert result.code == 0, result.output
    job = tmp_path / "jobs" / "o"
    found = trials(job)
    assert sorted(found) == ["u0000", "u0001"]  # the run went on
    for unit, trial in found.items():
        left = [int(p) for p in (job / unit / ".work" / "workspace" / "orphans.txt").read_text().split()]
        assert len(left) == 4
        assert [pid for pid in left if _stat(pid) is not None and _stat(pid)[1] != "Z"] == []  # gone when the command returns
        assert trial["exception_info"]["exception_type"] == "AgentTimeoutError"
        assert trial.get("verifier_result") is not None  # a timed-out unit is still scored
        killed = " ".join(trial["standard"]["agent"]["killed_at_end"])
        for pid in left[1:]:  # each sleep: in the group, in a session of its own, out of the tree
            assert re.search(rf"\b{pid} sleep\b", killed), killed
    assert leftovers(tmp_path) == []
    assert time.monotonic() - started < 300  # the 3 s turn limit held: not the default one


def test_resume_refuses_while_a_process_of_the_killed_run_lives_in_the_job(env, tmp_path):
    args = [sys.executable, "-m", "nullius_core", "run", "faulty", "oracle", "--bench-option", "mode=slow",
            "--bench-option", "delay=0.3", "-j", "2", "--job-name", "r9", "--jobs-dir", str(tmp_path)]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    job = tmp_path / "r9"
    try:
        wait_for(lambda: len(list(job.glob("*/result.json"))) >= 3, 600, "three trials finished")
    finally:
        proc.kill()
        proc.wait(timeout=30)
    runs = [json.loads(line) for line in (job / ".work" / "runs.jsonl").read_text().splitlines()]
    marker = runs[0]["marker"]
    watcher = identity([runs[0]["watcher"]])
    wait_for(lambda: not living(watcher), 300, "the killed run's watcher ended its sweep")  # it would end what is planted next
    trial = sorted(p.parent for p in job.glob("*/result.json"))[0]
    # what an orphan of the killed run would be: in a trial's folder, writing a trial's file, carrying the run's marker
    planted = [
        subprocess.Popen(["sleep", "604"], cwd=trial),  # in the trial's folder (a control's trial keeps no workspace)
        subprocess.Popen(["python3", "-c", "import sys, time; f = open(sys.argv[1], 'ab'); time.sleep(604)", str(trial / "trial.log")], cwd="/"),
        subprocess.Popen(["sleep", "604"], cwd="/", env={"PATH": os.environ["PATH"], "NULLIUS_RUN": marker + "/7"}),
    ]
    try:
        wait_for(lambda: all(Path(f"/proc/{p.pid}/fd").exists() for p in planted) and _opened(planted[1].pid, trial / "trial.log"), 300,
                 "the planted processes started")
        before = _listing(job)
        refused = run_cli(["run", "--resume", str(job)], env)
        assert refused.code == 2, refused.output
        assert "Traceback" not in refused.output
        lines = [line for line in refused.stderr.splitlines() if line.startswith("nullius:")]
        assert len(lines) == 1, refused.stderr
        for p in planted:
            assert re.search(rf"\b{p.pid}\b", lines[0]), lines[0]
        assert _listing(job) == before  # nothing moved aside, nothing written
    finally:
        for p in planted:
            p.kill()
            p.wait(timeout=10)
    resumed = run_cli(["run", "--resume", str(job)], env)
    assert resumed.code == 0, resumed.output
    finished = json.loads((job / "result.json").read_text())
    assert finished["standard"]["state"] == "finished" and finished["standard"]["passed"] == 12


def _opened(pid: int, path: Path) -> bool:
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") == str(path) for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


def _listing(job: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(job)): (p.stat().st_size, p.stat().st_mtime_ns) for p in job.rglob("*") if p.is_file()}


def test_an_agents_stderr_of_many_mib_is_kept_as_head_and_tail(env, fake_model, tmp_path):
    fake_model.use({"default": {"text": "alpha"}})
    result = run_agent(env, fake_model, "loud", "--limit", "1", "--job-name", "l")
    assert result.code == 0, result.output
    assert trials(tmp_path / "jobs" / "l")["u0000"]["standard"]["outcome"] == "passed"
    kept = (tmp_path / "jobs" / "l" / "u0000" / "agent" / "stderr.txt").read_bytes()
    written = len("stderr begins\n") + (24 * 1024 - 2) * 1024 + len("stderr ends\n")
    assert len(kept) < 3 * 1024 * 1024
    assert kept.startswith(b"stderr begins\nxxx") and kept.endswith(b"xxx\nstderr ends\n")
    notes = re.findall(rb"^\[nullius\] .*$", kept, re.M)
    said = [int(n) for note in notes for n in re.findall(rb"(\d+) bytes", note)]
    body = len(kept) - sum(len(n) + 1 for n in notes)
    assert written - body in said, notes  # the line says exactly how much was cut


def test_a_drivers_stderr_of_many_mib_is_kept_as_head_and_tail_in_the_trials_log(env, tmp_path):
    root = catalogue(tmp_path)
    driver = root / "benchmarks" / "faulty" / "driver.py"
    source = driver.read_text()
    flood = ('    if op == "setup" and unit == "u0000":\n'
             '        sys.stderr.write(("z" * 1023 + "\\n") * (24 * 1024))\n'
             '        sys.stderr.flush()\n')
    assert '    if op == "setup":\n' in source
    driver.write_text(source.replace('    if op == "setup":\n', flood + '    if op == "setup":\n', 1))
    result = run_cli(["run", "faulty", "oracle", "--limit", "2", "--job-name", "d", "--jobs-dir", str(tmp_path / "jobs")], env)
    assert result.code == 0, result.output
    job = tmp_path / "jobs" / "d"
    assert {k: v["standard"]["outcome"] for k, v in trials(job).items()} == {"u0000": "passed", "u0001": "passed"}
    kept = (job / "u0000" / "trial.log").read_bytes()
    assert len(kept) < 3 * 1024 * 1024
    assert kept.startswith(b"driver op=setup unit=u0000") and b"zzz\n" in kept
    assert re.search(rb"^driver op=score unit=u0000 .*\n\Z", kept.splitlines(keepends=True)[-1], re.M)  # the tail: what came last
    note = re.findall(rb"^\[nullius\] (\d+) bytes of the stderr of the driver of faulty cut", kept, re.M)
    assert len(note) == 1 and int(note[0]) > 20 * 1024 * 1024
    assert b"zzz" not in (job / "u0001" / "trial.log").read_bytes()  # the next trial's log starts afresh


def test_resume_refuses_a_job_whose_run_is_still_going(env, tmp_path):
    args = [sys.executable, "-m", "nullius_core", "run", "faulty", "oracle", "--bench-option", "mode=slow",
            "--bench-option", "delay=20", "--job-name", "live", "--jobs-dir", str(tmp_path)]  # minutes of run: it is still going
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    job = tmp_path / "live"
    try:
        wait_for(lambda: (job / ".work" / "runs.jsonl").exists(), 600, "the run said in the job who runs it")
        refused = run_cli(["run", "--resume", str(job)], env)
        assert refused.code == 2, refused.output
        assert f"is being run by pid {proc.pid}" in refused.stderr and "Traceback" not in refused.output
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    assert proc.returncode == 130  # the running one was left alone, and cancelled as asked


def _life_with_after_kill(job, mark, then: str) -> subprocess.Popen:
    marking = f"open({str(mark)!r}, 'w').write('swept')"
    script = (
        "import sys, time\nfrom pathlib import Path\nfrom nullius_core.processes.lifetime import Lifetime\n"
        f"with Lifetime.begin_run(Path({str(job)!r})):\n"
        "    from nullius_core.processes import current\n"
        f"    current().after_kill([sys.executable, '-c', {marking!r}])\n"
        "    print('told', flush=True)\n"
        f"    {then}\n")
    return subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, start_new_session=True)


def test_a_killed_runs_watcher_runs_what_it_was_asked_to_after_a_kill_and_a_clean_end_runs_nothing(tmp_path):
    """after_kill: a backend's sweep of what lives outside the run's processes (docker's containers), run by the watcher only
    when the run died without ending well."""
    job = tmp_path / "job"
    job.mkdir()
    killed, clean = tmp_path / "killed", tmp_path / "clean"
    proc = _life_with_after_kill(job, killed, "time.sleep(600)")
    assert proc.stdout.readline().strip() == "told"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(30)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not killed.exists():
        time.sleep(0.05)
    assert killed.exists() and killed.read_text() == "swept"
    ended = _life_with_after_kill(job, clean, "pass")
    assert ended.stdout.readline().strip() == "told" and ended.wait(60) == 0  # its exit waits for the watcher's sweep
    assert not clean.exists()
