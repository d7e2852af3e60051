"""Tasks that are containers: each unit in its task's own image, the agent added to it, the check run where the work is.

The fixture benchmark `ownbench` (fixtures/catalogue/benchmarks/ownbench)
builds its image from a folder of its own (on this machine's base image,
named by the NULLIUS_BASE build argument: no registry). Its units: `answer`
(the check copied in after the agent, its files collected), `kept` (the
same, with verify.keep_processes), `slow` (a check
past its time limit), `network` (a check whose one way out is the egress
proxy), `badpull` (a pull not pinned by digest). Copies of it change the
answer's Dockerfile: a build that fails, a musl image, an image without node, an image whose user is not root
(with the fixture agent `homebound`, fixtures/catalogue/agents), an image without python3 (the agents on the standalone
Python, from the session's mirror on the loopback: docker_world.python_mirror).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from nullius_core.testing import run_cli
from nullius_core.testing.fake_model import FakeRequest, Reply, ToolCall

from docker_world import (DOOR_PORTS, docker, labelled, listening_everywhere, local_registry, machine_addresses, model_args,
                          forget_runtime, musl_image, python_mirror, scan_command, the_scan_in)
from nullius_backend_docker import pyruntime

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "catalogue"


def trials(jobs: Path, job: str) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in (jobs / job).glob("*/result.json")}


def outcomes(found: dict[str, dict]) -> dict[str, str]:
    return {u: t["standard"]["outcome"] for u, t in found.items()}


def failed_for_setup(result, job: Path, kind: str = "EnvironmentSetupError") -> None:
    """Every unit of the run errored in its setup (a reason not the agent's): the run says it failed, exit 1, and why."""
    assert result.code == 1, result.output
    summary = json.loads((job / "result.json").read_text())["standard"]
    assert summary["state"] == "failed" and kind in summary["reason"], summary


def test_controls_run_in_the_tasks_own_image_on_either_backend(world):
    env, _, _ = world
    env = {**env, "NULLIUS_CATALOGUE": str(FIXTURES)}
    jobs = Path(env["NULLIUS_JOBS_DIR"])

    result = run_cli(["run", "ownbench", "oracle", "--backend", "docker", "--job-name", "own-oracle"], env)
    assert result.code == 0, result.output
    found = trials(jobs, "own-oracle")
    assert outcomes(found) == {"answer": "passed", "kept": "passed", "slow": "failed", "network": "passed", "badpull": "error"}
    image = found["answer"]["standard"]["image"]
    assert image.startswith("nullius/own-ownbench-tasks-answer-environment:") and found["answer"]["standard"]["environment"] == "task"
    answer = jobs / "own-oracle" / "answer"
    # the oracle's solve ran in the box; the check's files came in after it, its folder came out beside the run's own
    assert (answer / "agent" / "solve-stdout.txt").read_text() == "solved\n"
    changes = (answer / "agent" / "container-changes.txt").read_text().splitlines()
    assert "A /app/answer.txt" in changes and "A /solution" in changes
    assert not any("/tests" in line for line in changes)  # recorded before the check's files were put in
    assert not any("docker-init" in line for line in changes)  # docker's own, not the task's
    score = json.loads((answer / "verifier" / "score.json").read_text())
    assert score["detail"] == {"exit": 0, "timed_out": False, "collected": ["processes.txt", "reward.txt"], "output": "checked in /app\n"}
    assert (answer / "verifier" / "test-stdout.txt").read_text() == "checked in /app\n"
    assert (answer / "verifier" / "stopped.txt").read_text() == "nothing of the agent was running\n"

    # a check past its seconds is stopped and says so; the score decides what that is worth
    slow = json.loads((jobs / "own-oracle" / "slow" / "verifier" / "score.json").read_text())
    assert slow["detail"]["timed_out"] is True and slow["detail"]["exit"] is None
    assert slow["detail"]["output"] == "a check that takes too long\n"
    assert found["slow"]["verifier"]["finished_at"] < found["slow"]["finished_at"]

    # the check's one way out is the egress proxy, which refuses a private address and says so in the trial's records
    network = jobs / "own-oracle" / "network" / "verifier"
    assert "proxy=http://egress:61128" in (network / "test-stdout.txt").read_text()
    assert "refused 403" in (network / "test-stdout.txt").read_text()
    log = [json.loads(line) for line in (network / "egress.log").read_text().splitlines()]
    assert [(e["host"], e["allowed"]) for e in log] == [("172.17.0.1", False)] and log[0]["why"]

    bad = found["badpull"]["exception_info"]
    assert bad["exception_type"] == "EnvironmentSetupError" and "image.pull" in bad["exception_message"] and "sha256" in bad["exception_message"]
    assert labelled(env, "own-oracle") == {"containers": [], "networks": [], "volumes": []}

    # built once: the next run finds it by its hash
    again = run_cli(["run", "ownbench", "nop", "--backend", "docker", "--job-name", "own-nop"], env)
    assert again.code == 0, again.output
    assert "built before" in (jobs / "own-nop" / ".work" / "own-tasks-answer-environment.log").read_text()
    found = trials(jobs, "own-nop")
    assert found["answer"]["standard"]["outcome"] == "failed" and found["answer"]["standard"]["image"] == image  # the image as it is

    # a control needs docker, not the docker backend: on the local backend it still runs in the task's image
    local = run_cli(["run", "ownbench", "oracle", "--job-name", "own-local"], env)
    assert local.code == 0, local.output
    assert outcomes(trials(jobs, "own-local"))["answer"] == "passed"
    assert json.loads((jobs / "own-local" / "config.json").read_text())["standard"]["backend"]["name"] == "local"
    assert labelled(env, "own-local") == {"containers": [], "networks": [], "volumes": []}


SCAN_TARGETS = ["127.0.0.1", *machine_addresses()]


def box_player(request: FakeRequest) -> Reply:
    """A model that works in the box with the reference agent's run_command, leaving a process running; then scans for a way out."""
    if request.last_tool_result is None:
        # the leftover says "up" once it is in a session of its own: the tool kills its command's process group when the
        # command ends, and a child that had not yet left it would die with it
        command = ("echo 42 > answer.txt; (setsid sh -c 'echo up; exec sleep 300 >/dev/null 2>&1' </dev/null &) | head -n1; "
                   "ls /tests 2>&1; echo cwd=$(pwd); cat README.txt; "
                   "touch \"$HOME/made-in-the-box\"; echo uid=$(id -u); "
                   # the task's limits (setup: memory_mb 512, cpus 1), as the box's cgroup holds them (v1, else v2)
                   "echo memory=$(cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max); "
                   "echo cpu=$(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us 2>/dev/null || cat /sys/fs/cgroup/cpu.max)")
        return Reply(tool_calls=[ToolCall(name="run_command", arguments={"command": command})])
    result = request.last_tool_result
    if "SCAN {" not in result:
        return Reply(tool_calls=[ToolCall(name="run_command", arguments={"command": scan_command(SCAN_TARGETS)})])
    return Reply(text="done: " + (result if isinstance(result, str) else json.dumps(result)))


def test_the_agent_is_added_to_the_box_and_stopped_before_the_check(world):
    env, fake, _ = world
    env = {**env, "NULLIUS_CATALOGUE": str(FIXTURES)}
    jobs = Path(env["NULLIUS_JOBS_DIR"])
    fake.use(box_player)
    with listening_everywhere():
        result = run_cli(["run", "ownbench", "reference", *model_args(fake), "--job-name", "own-agent"], env)
    assert result.code == 0, result.output
    found = trials(jobs, "own-agent")
    assert outcomes(found) == {"answer": "passed", "kept": "passed", "slow": "failed", "network": "passed", "badpull": "error"}
    unit = jobs / "own-agent" / "answer"
    seen = (unit / "agent" / "acp.jsonl").read_text()
    # it worked in the image's working directory, in the task's image, before the check's files were there
    assert "cwd=/app" in seen and "the task's own image" in seen and "No such file" in seen and "uid=0" in seen
    assert "memory=536870912" in seen and re.search(r"cpu=(100000\b|100000 100000)", seen)
    calls = [json.loads(line) for line in (unit / "agent" / "calls.jsonl").read_text().splitlines()]
    assert len(calls) == 3 and all(c["status"] == 200 for c in calls)  # through the run's relay, as on the base
    # every port of every address of this machine, scanned from inside the box while a server listened on 0.0.0.0:
    # only the door, on the box's own loopback
    scan = the_scan_in(unit / "agent" / "acp.jsonl")
    assert scan["127.0.0.1"]["open"] == DOOR_PORTS
    assert all(scan[a]["open"] == [] for a in SCAN_TARGETS[1:]), scan
    # what it left running was stopped before the check, and named
    stopped = (unit / "verifier" / "stopped.txt").read_text()
    assert "sleep 300" in stopped
    during = (unit / "verifier" / "processes.txt").read_text()
    assert "sleep 300" not in during and "agent.py" not in during
    kept = jobs / "own-agent" / "kept" / "verifier"
    assert "sleep 300" in (kept / "processes.txt").read_text() and "kept" in (kept / "stopped.txt").read_text()
    changes = (unit / "agent" / "container-changes.txt").read_text().splitlines()
    assert changes == ["C /app", "A /app/answer.txt"]  # the folders of the agent's mounts are docker's, not the agent's
    # the home it wrote as the image's user (root) is given back
    made = unit / ".work" / "home" / "made-in-the-box"
    assert made.exists() and made.stat().st_uid == os.getuid()
    assert labelled(env, "own-agent") == {"containers": [], "networks": [], "volumes": []}

    # on the local backend an agent's unit in an own image is refused, naming what it needs
    local = run_cli(["run", "ownbench", "reference", *model_args(fake)[:-2], "--unsandboxed", "--job-name", "own-agent-local"], env)
    failed_for_setup(local, jobs / "own-agent-local")
    refused = trials(jobs, "own-agent-local")["answer"]["exception_info"]
    assert refused["exception_type"] == "EnvironmentSetupError" and "--backend docker" in refused["exception_message"]


def test_an_image_whose_user_is_not_root_gets_the_agents_home_for_the_unit(world, tmp_path):
    """USER 1234 (no user of the image's /etc/passwd, nor of this machine): the agent writes into the HOME made here; after
    the unit every file of it is yours again, its modes as the agent left them, nothing else of this machine touched."""
    env, fake, _ = world
    catalogue = tmp_path / "catalogue"
    (catalogue / "benchmarks").mkdir(parents=True)
    subprocess.run(["cp", "-r", str(FIXTURES / "benchmarks" / "ownbench"), str(catalogue / "benchmarks" / "ownbench")], check=True)
    subprocess.run(["cp", "-r", str(FIXTURES / "agents"), str(catalogue / "agents")], check=True)
    dockerfile = catalogue / "benchmarks" / "ownbench" / "tasks" / "answer" / "environment" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "RUN mkdir -p /logs && chown 1234 /app /logs\nUSER 1234\n")
    env = {**env, "NULLIUS_CATALOGUE": str(catalogue)}
    jobs = Path(env["NULLIUS_JOBS_DIR"])
    result = run_cli(["run", "ownbench", "homebound", *model_args(fake), "--limit", "1", "--job-name", "own-user"], env)
    assert result.code == 0, result.output
    found = trials(jobs, "own-user")
    assert outcomes(found) == {"answer": "passed"}, found["answer"].get("exception_info")
    unit = jobs / "own-user" / "answer"
    said = (unit / "agent" / "acp.jsonl").read_text()
    assert "uid=1234; python=" in said and "answer: written; home: written; private: written; tmp: written" in said, said[-2000:]
    home = unit / ".work" / "home"
    made = [home, *home.rglob("*")]
    assert {p.relative_to(home).as_posix() for p in made} >= {".", "made-in-the-box", ".state/deep/mine.txt", "tmp"}
    assert all(p.lstat().st_uid == os.getuid() and p.lstat().st_gid == os.getgid() for p in made), \
        [(p, p.lstat().st_uid, p.lstat().st_gid) for p in made]
    assert (home / ".state" / "deep" / "mine.txt").read_text() == "only mine\n"
    # modes as they were made: the agent's private file stays private, the HOME is writable by no one else
    assert (home / ".state" / "deep" / "mine.txt").stat().st_mode & 0o777 == 0o600
    assert (home / ".state" / "deep").stat().st_mode & 0o777 == 0o700
    assert home.stat().st_mode & 0o022 == 0 and (unit / ".work").stat().st_uid == os.getuid()
    assert labelled(env, "own-user") == {"containers": [], "networks": [], "volumes": []}


def test_an_own_image_that_cannot_be_built_is_the_units_sandbox_build_failure(world, tmp_path):
    env, _, _ = world
    catalogue = tmp_path / "catalogue" / "benchmarks"
    catalogue.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cp", "-r", str(FIXTURES / "benchmarks" / "ownbench"), str(catalogue / "ownbench")], check=True)
    dockerfile = catalogue / "ownbench" / "tasks" / "answer" / "environment" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "RUN exit 3\n")
    env = {**env, "NULLIUS_CATALOGUE": str(tmp_path / "catalogue")}
    stopped = set(docker("ps", "-aq", "--filter", "status=exited").split())
    result = run_cli(["run", "ownbench", "oracle", "--backend", "docker", "--job-name", "own-broken"], env)
    failed_for_setup(result, Path(env["NULLIUS_JOBS_DIR"]) / "own-broken", "SandboxBuildFailedError")
    assert set(docker("ps", "-aq", "--filter", "status=exited").split()) == stopped  # the failed step's container went too
    jobs = Path(env["NULLIUS_JOBS_DIR"])
    found = trials(jobs, "own-broken")
    kinds = {u: t["exception_info"]["exception_type"] for u, t in found.items()}
    assert kinds == {**{u: "SandboxBuildFailedError" for u in found}, "badpull": "EnvironmentSetupError"}  # its pull is malformed
    message = found["answer"]["exception_info"]["exception_message"]
    log = jobs / "own-broken" / ".work" / "own-tasks-answer-environment.log"
    assert "did not build" in message and str(log) in message
    assert log.read_text().count(": building ") == 1  # one try a run: every unit that asks is told why
    assert "exit 3" in log.read_text() or "returned a non-zero code: 3" in log.read_text()


def test_an_agent_whose_runtime_needs_glibc_is_not_run_in_a_musl_image(world, tmp_path):
    env, fake, _ = world
    base = musl_image(tmp_path / "musl")
    catalogue = tmp_path / "catalogue" / "benchmarks"
    catalogue.mkdir(parents=True)
    subprocess.run(["cp", "-r", str(FIXTURES / "benchmarks" / "ownbench"), str(catalogue / "ownbench")], check=True)
    (catalogue / "ownbench" / "tasks" / "answer" / "environment" / "Dockerfile").write_text(f"FROM {base}\nWORKDIR /app\n")
    env = {**env, "NULLIUS_CATALOGUE": str(tmp_path / "catalogue")}
    fake.use(box_player)
    result = run_cli(["run", "ownbench", "reference", *model_args(fake), "--job-name", "own-musl"], env)
    failed_for_setup(result, Path(env["NULLIUS_JOBS_DIR"]) / "own-musl")
    jobs = Path(env["NULLIUS_JOBS_DIR"])
    found = trials(jobs, "own-musl")
    refused = found["answer"]["exception_info"]
    assert refused["exception_type"] == "EnvironmentSetupError"
    assert refused["exception_message"] == "not run: the agent's runtime (python) needs glibc; this task's image is musl-based"
    assert not (jobs / "own-musl" / "answer" / "agent" / "calls.jsonl").exists() or not (jobs / "own-musl" / "answer" / "agent" / "calls.jsonl").read_text()
    assert labelled(env, "own-musl") == {"containers": [], "networks": [], "volumes": []}


def python_box_player(request: FakeRequest) -> Reply:
    """The reference agent's run_command in a box: the answer written, then what the agent runs on and what the image has."""
    if request.last_tool_result is None:
        command = ("echo 42 > answer.txt; echo exe=$(readlink -f /proc/$PPID/exe); echo image-python3=$(ls /usr/bin/python3* /usr/local/bin/python3* 2>/dev/null); "
                   "ls /root/.pyenv 2>&1 | head -n1")
        return Reply(tool_calls=[ToolCall(name="run_command", arguments={"command": command})])
    return Reply(text="done")


def own_catalogue(tmp_path: Path, dockerfile_tail: str) -> Path:
    """A copy of ownbench (its answer's Dockerfile with more lines) and the fixture agents."""
    catalogue = tmp_path / "catalogue"
    (catalogue / "benchmarks").mkdir(parents=True)
    subprocess.run(["cp", "-r", str(FIXTURES / "benchmarks" / "ownbench"), str(catalogue / "benchmarks" / "ownbench")], check=True)
    subprocess.run(["cp", "-r", str(FIXTURES / "agents"), str(catalogue / "agents")], check=True)
    dockerfile = catalogue / "benchmarks" / "ownbench" / "tasks" / "answer" / "environment" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + dockerfile_tail)
    return catalogue


def test_a_python_agent_runs_on_the_standalone_python_under_opt_nullius(world, tmp_path):
    """An image without python3: the reference agent's environment runs on the standalone Python (from the session's mirror on
    the loopback, installed by uv), mounted at /opt/nullius/python; this machine's interpreter is not in the box. An agent
    started as `python3` is started by it too."""
    env, fake, _ = world
    catalogue = own_catalogue(tmp_path, "RUN rm -f /usr/bin/python3* /usr/local/bin/python3*\n")
    env = {**env, "NULLIUS_CATALOGUE": str(catalogue)}
    jobs = Path(env["NULLIUS_JOBS_DIR"])
    fake.use(python_box_player)
    result = run_cli(["run", "ownbench", "reference", *model_args(fake), "--limit", "1", "--job-name", "own-python"], env)
    assert result.code == 0, result.output
    found = trials(jobs, "own-python")
    assert outcomes(found) == {"answer": "passed"}, found["answer"].get("exception_info")
    seen = (jobs / "own-python" / "answer" / "agent" / "acp.jsonl").read_text()
    assert "exe=/opt/nullius/python/bin/python3.11\\n" in seen and "image-python3=\\n" in seen, seen[-3000:]
    assert "cannot access '/root/.pyenv': No such file or directory" in seen  # this machine's interpreter is not in the box
    ran_on = found["answer"]["standard"]["agent"]["runtime"]["python"]
    assert ran_on["python"] == "3.11.2" and ran_on["build"] == "debian-bookworm" and ran_on["at"] == "/opt/nullius/python"
    assert ran_on["uv"] == "0.13.9" and ran_on["source"] == f"UV_PYTHON_DOWNLOADS_JSON_URL={env['UV_PYTHON_DOWNLOADS_JSON_URL']}"
    installed = Path(env["STANDARD_DIR"]) / "runtimes" / "python"
    assert json.loads(next(installed.glob("3.11-*/runtime.json")).read_text())["name"] == "cpython-3.11.2-linux-x86_64-gnu"

    # `python3 {here}/homebound_agent.py`: the image has no python3; the standalone's runs it
    result = run_cli(["run", "ownbench", "homebound", *model_args(fake), "--limit", "1", "--job-name", "own-python3"], env)
    assert result.code == 0, result.output
    found = trials(jobs, "own-python3")
    assert outcomes(found) == {"answer": "passed"}, found["answer"].get("exception_info")
    said = (jobs / "own-python3" / "answer" / "agent" / "acp.jsonl").read_text()
    assert "python=/opt/nullius/python/bin/python3.11 3.11.2 /opt/nullius/python;" in said, said[-2000:]
    assert found["answer"]["standard"]["agent"]["runtime"]["python"]["python"] == "3.11.2"
    progress = (jobs / "own-python3" / "progress.jsonl").read_text()
    assert '"runtime": "python-3.11"' in progress and '"state": "ready"' in progress
    assert labelled(env, "own-python3") == {"containers": [], "networks": [], "volumes": []}


def test_a_standalone_python_that_cannot_be_installed_is_said_and_the_agent_runs_as_before(world, tmp_path):
    """The mirror's list names a sha256 the build does not have: uv refuses it; the run says so, the trial records it, and the
    agent runs as before the standalone (its environment on this machine's interpreter, at its path)."""
    env, fake, root = world
    with python_mirror(root / "python-mirror", sha256="0" * 64) as wrong:
        env = {**env, **wrong.env, "NULLIUS_CATALOGUE": str(FIXTURES)}
        jobs = Path(env["NULLIUS_JOBS_DIR"])
        fake.use(python_box_player)
        result = run_cli(["run", "ownbench", "reference", *model_args(fake), "--limit", "1", "--job-name", "own-unreachable"], env)
    assert result.code == 0, result.output
    found = trials(jobs, "own-unreachable")
    assert outcomes(found) == {"answer": "passed"}, found["answer"].get("exception_info")
    ran_on = found["answer"]["standard"]["agent"]["runtime"]["python"]
    assert ran_on["standalone"].startswith("not installed: `uv python install 3.11` failed") and "0" * 64 in ran_on["standalone"], ran_on
    assert ran_on["used"] == "this machine's interpreter at its path"
    progress = [json.loads(line) for line in (jobs / "own-unreachable" / "progress.jsonl").read_text().splitlines()]
    tried = [p["state"] for p in progress if p.get("runtime") == "python-3.11" and p["state"] != "running"]  # running: a slow try's 30 s lines
    assert tried == ["failed"]  # tried once a run, and said
    assert not (Path(env["STANDARD_DIR"]) / "runtimes" / "python" / pyruntime.key("3.11", wrong.env)).exists()  # nothing half-made
    forget_runtime(Path(env["STANDARD_DIR"]), wrong.env)
    assert labelled(env, "own-unreachable") == {"containers": [], "networks": [], "volumes": []}


def claude_box_player(request: FakeRequest) -> Reply:
    """Claude Code's Bash tool in the box: the answer written, and what the image itself has as node."""
    if "Bash" not in request.tools:
        return Reply(text="side")  # a side call (a title, a topic check)
    if request.last_tool_result is None:
        command = "echo 42 > /app/answer.txt; echo node=$(command -v node); cat /app/README.txt"
        return Reply(tool_calls=[ToolCall(name="Bash", arguments={"command": command, "description": "answer"})])
    return Reply(text="done")


def test_an_agent_from_npm_runs_on_the_bases_node_in_an_image_without_node(world, tmp_path):
    env, fake, _ = world
    catalogue = tmp_path / "catalogue" / "benchmarks"
    catalogue.mkdir(parents=True)
    subprocess.run(["cp", "-r", str(FIXTURES / "benchmarks" / "ownbench"), str(catalogue / "ownbench")], check=True)
    dockerfile = catalogue / "ownbench" / "tasks" / "answer" / "environment" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "RUN rm -rf /usr/local/bin/node /usr/local/bin/npm /usr/local/lib/node_modules\n")
    env = {**env, "NULLIUS_CATALOGUE": str(tmp_path / "catalogue"), "ANTHROPIC_API_KEY": "sk-ant-held-by-the-relay-0123456789"}
    fake.use(claude_box_player)
    result = run_cli(["run", "ownbench", "claude", "--model", "fake-claude", "--provider", "anthropic", "--base-url", fake.openai_base_url,
                      "--backend", "docker", "--limit", "1", "--job-name", "own-claude"], env, timeout=900)
    assert result.code == 0, result.output
    jobs = Path(env["NULLIUS_JOBS_DIR"])
    found = trials(jobs, "own-claude")
    assert outcomes(found) == {"answer": "passed"}, found["answer"].get("exception_info")
    unit = jobs / "own-claude" / "answer"
    seen = (unit / "agent" / "acp.jsonl").read_text()
    assert "node=\\n" in seen and "the task's own image" in seen  # the image has no node; the agent ran on the base's
    assert all(json.loads(line)["status"] == 200 for line in (unit / "agent" / "calls.jsonl").read_text().splitlines())
    leaked = subprocess.run(["grep", "-rlF", env["ANTHROPIC_API_KEY"], str(jobs / "own-claude")], capture_output=True, text=True)
    assert leaked.returncode == 1 and leaked.stdout == ""  # searched, and not found in any record
    assert labelled(env, "own-claude") == {"containers": [], "networks": [], "volumes": []}


def test_an_image_pinned_by_digest_is_pulled_then_used_as_it_is(world, tmp_path):
    env, _, _ = world
    # the task's image on a small base of its own (busybox on musl, a few MB, not this machine's 400 MB base):
    # what is pushed and pulled is the task's image whatever it is made of, and a control needs no more than sh in it
    base = musl_image(tmp_path / "musl")
    task = FIXTURES / "benchmarks" / "ownbench" / "tasks" / "answer" / "environment"
    with local_registry(tmp_path / "registry") as registry:
        # the task's image, published: pushed to the registry, then known here only by its digest
        repo = f"{registry}/ownbench/answer"
        subprocess.run(["docker", "build", "-q", "--build-arg", f"NULLIUS_BASE={base}", "-t", f"{repo}:1", str(task)], check=True,
                       capture_output=True, timeout=600)
        subprocess.run(["docker", "push", f"{repo}:1"], check=True, capture_output=True, timeout=600)
        digests = json.loads(docker("image", "inspect", "--format", "{{json .RepoDigests}}", f"{repo}:1"))
        digest = next(d for d in digests if d.startswith(f"{repo}@sha256:"))
        subprocess.run(["docker", "rmi", f"{repo}:1"], check=True, capture_output=True)
        assert subprocess.run(["docker", "image", "inspect", digest], capture_output=True).returncode != 0

        catalogue = tmp_path / "catalogue" / "benchmarks"
        catalogue.mkdir(parents=True)
        subprocess.run(["cp", "-r", str(FIXTURES / "benchmarks" / "ownbench"), str(catalogue / "ownbench")], check=True)
        driver = catalogue / "ownbench" / "driver.py"
        driver.write_text(driver.read_text().replace('IMAGE = {"build": "tasks/answer/environment", "memory_mb": 512, "cpus": 1}',
                                                     f'IMAGE = {{"pull": "{digest}", "memory_mb": 512}}'))
        env = {**env, "NULLIUS_CATALOGUE": str(tmp_path / "catalogue")}
        jobs = Path(env["NULLIUS_JOBS_DIR"])
        for job in ("own-pull", "own-pulled"):
            result = run_cli(["run", "ownbench", "oracle", "--backend", "docker", "--limit", "1", "--job-name", job], env)
            assert result.code == 0, result.output
            found = trials(jobs, job)
            assert outcomes(found) == {"answer": "passed"} and found["answer"]["standard"]["image"] == digest
        assert "pulling" in (jobs / "own-pull" / ".work" / "own-pull.log").read_text()
        assert "here already" in (jobs / "own-pulled" / ".work" / "own-pull.log").read_text()

        # a digest the registry does not have: the unit's setup error, saying what docker said
        missing = f"{repo}@sha256:{'0' * 64}"
        driver.write_text(driver.read_text().replace(digest, missing))
        result = run_cli(["run", "ownbench", "oracle", "--backend", "docker", "--limit", "1", "--job-name", "own-unpulled"], env)
        failed_for_setup(result, jobs / "own-unpulled", "SandboxBuildFailedError")
        failed = trials(jobs, "own-unpulled")["answer"]["exception_info"]
        assert failed["exception_type"] == "SandboxBuildFailedError"
        assert failed["exception_message"].startswith(f"the task's image {missing} could not be pulled (docker pull exit 1: ")
    subprocess.run(["docker", "rmi", digest], capture_output=True)


def test_a_collected_link_leading_out_of_the_verifier_folder_is_noted_not_made(tmp_path):
    """What `collect` copies out of a box is a tar of the container's folder: a link in it must not lead the driver out."""
    import io
    import tarfile

    from nullius_backend_docker import boxfiles

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, kind, target in (("verifier/reward.txt", tarfile.REGTYPE, ""), ("verifier/leak", tarfile.SYMTYPE, "/etc/hostname"),
                                   ("verifier/up", tarfile.SYMTYPE, "../../outside"), ("verifier/same", tarfile.SYMTYPE, "reward.txt")):
            info = tarfile.TarInfo(name)
            info.type, info.linkname = kind, target
            data = b"1\n" if kind == tarfile.REGTYPE else b""
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    verifier = tmp_path / "verifier"
    verifier.mkdir()
    assert boxfiles.extract(buffer.getvalue(), verifier) == ["reward.txt"]
    assert (verifier / "same").is_symlink() and (verifier / "same").read_text() == "1\n"  # inside: kept
    for name in ("leak", "up"):
        assert not (verifier / name).is_symlink() and "taken out before the check" in (verifier / name).read_text()
    assert sorted(line.split("\t")[0] for line in (verifier / "links.txt").read_text().splitlines()) == ["leak", "up"]


def test_a_tasks_build_reaches_nothing_of_this_machine_and_no_folder_outside_the_task(tmp_path):
    """A task set is someone else's: its Dockerfile's RUN steps have no network (on docker's bridge they reached a service of
    this machine listening on 0.0.0.0), and a build folder that is a link out of the task is refused before docker sees it."""
    import socket

    from nullius_backend_docker.ownimage import ensure
    from nullius_core.contracts.own_image import BuildFailed

    with socket.socket() as listener:
        listener.bind(("0.0.0.0", 0))
        listener.listen()
        listener.settimeout(0)
        port = listener.getsockname()[1]
        task = tmp_path / "task"
        (task / "environment").mkdir(parents=True)
        (task / "environment" / "Dockerfile").write_text(
            "ARG NULLIUS_BASE\nFROM ${NULLIUS_BASE}\n"
            f"RUN python3 -c \"import socket; socket.create_connection(('172.17.0.1', {port}), 5)\"\n")
        log = tmp_path / "build.log"
        with pytest.raises(BuildFailed, match="did not build"):
            ensure("hostile", task, "environment", None, "nullius/base:latest", log, tmp_path / "images")
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody came
    assert "Network is unreachable" in log.read_text() or "unreachable" in log.read_text().lower(), log.read_text()[-800:]
    (task / "elsewhere").symlink_to(tmp_path)
    with pytest.raises(BuildFailed, match="leads out of"):
        ensure("hostile", task, "elsewhere", None, "nullius/base:latest", log, tmp_path / "images")
