"""The ray backend on a real three-node cluster of this machine: units spread, files and records back, a node killed mid-run.

The model is the scripted fake model; everything else is real: Ray's
raylets, the node actors, the reference agent on each node, the relays.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ray_world import NODES, Cluster, free_port

from nullius_core.testing import isolated_env, run_cli
from nullius_core.testing.fake_model import running_fake_model

REPO = Path(__file__).resolve().parents[3]
KEY = "sk-ray-held-by-the-node-relays-7f3a9c2e51"
RUN_SECONDS = 600
# the agent writes the answer and where it worked into its workspace, then answers
SCRIPT = {"rules": [
    {"when": {"after_tool_result": ""}, "reply": {"text": "#### 18"}},
    {"reply": {"tool_calls": [{"name": "write_file", "arguments": {"path": "answer.txt", "content": "18"}},
                              {"name": "run_command", "arguments": {"command": "pwd > where.txt"}}]}},
]}


@pytest.fixture(scope="module")
def cluster():
    made = Cluster()
    try:
        made.start()
        yield made
    finally:
        made.stop()  # nothing of the cluster outlives the tests, whatever failed
        made.remove()


@pytest.fixture(scope="module")
def world(cluster, tmp_path_factory, nullius_installs):
    root = tmp_path_factory.mktemp("ray-home")
    env = {**isolated_env(root, standard_dir=nullius_installs), "OPENAI_COMPATIBLE_API_KEY": KEY, "NULLIUS_RAY_ADDRESS": cluster.address}
    with running_fake_model(SCRIPT) as fake:
        yield env, fake


def agent_run(fake, *more: str) -> list[str]:
    return ["run", "gsm8k", "reference", "--model", "fake-model", "--provider", "openai-compatible", "--base-url", fake.openai_base_url,
            "--unsandboxed", "--backend", "ray", *more]


def trials(job: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in job.glob("*/result.json")}


def scored(result: dict) -> bool:
    """No exception, and a reward (the fake model answers 18 to every problem: the first passes, the others fail)."""
    reward = (result.get("verifier_result") or {}).get("rewards", {}).get("reward")
    return result.get("exception_info") is None and reward in (0.0, 1.0)


def node_of(result: dict) -> str:
    return result["standard"]["agent"]["runtime"]["ray"]["node_id"]


def resource_nodes(job: Path) -> dict[str, str]:
    """The job's config.json's nodes, by the test's resource each has: nodeA -> its node id."""
    nodes = json.loads((job / "config.json").read_text())["standard"]["backend"]["nodes"]
    return {name: n["node_id"] for n in nodes for name in NODES if name in n["resources"]}


def harbor_reads(job: Path) -> dict:
    sys.path.insert(0, str(REPO / "tests"))
    from harbor.venv import ensure_harbor_python

    done = subprocess.run([str(ensure_harbor_python()), str(REPO / "tests" / "harbor" / "validate_job.py"), str(job)],
                          capture_output=True, text=True, timeout=300)
    return json.loads(done.stdout)


def no_agent_left(cluster: Cluster) -> list[str]:
    """Processes working in a node's folders (an agent the node's side did not end)."""
    left = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cwd = os.readlink(entry / "cwd")
            except OSError:
                continue
            if cwd.startswith(str(cluster.root)) and "/nullius-ray-" in cwd:
                left.append(f"{entry.name} {cwd}")
    return left


def test_units_spread_over_three_nodes_and_their_files_and_records_come_back(cluster, world):
    env, fake = world
    jobs = Path(env["NULLIUS_JOBS_DIR"])
    for shard in ("1/2", "2/2"):
        result = run_cli(agent_run(fake, "--limit", "6", "--shard", shard, "-j", "6", "--job-name", f"spread-{shard[0]}"), env,
                         timeout=RUN_SECONDS)
        assert result.code == 0, result.output
    job = jobs / "spread-1"
    ran = trials(job)
    assert len(ran) == 6 and all(scored(r) for r in ran.values())
    by_resource = resource_nodes(job)
    assert set(by_resource) == set(NODES)
    assert {node_of(r) for r in ran.values()} == set(by_resource.values())  # every node ran some
    tmpdir_of = {by_resource[name]: cluster.tmpdirs[name] for name in NODES}
    for name, result in ran.items():
        trial = job / name
        # written on its node, in the node's own folder, and back in the job through the backend
        assert (trial / ".work" / "workspace" / "answer.txt").read_text() == "18"
        where = (trial / ".work" / "workspace" / "where.txt").read_text().strip()
        assert where.startswith(str(tmpdir_of[node_of(result)]) + "/nullius-ray-") and where.endswith(f"/{name}/workspace")
        calls = [json.loads(line) for line in (trial / ".work" / "relay" / "calls.jsonl").read_text().splitlines()]
        assert [c["route"] for c in calls] == [name, name] and all(c["status"] == 200 for c in calls)
        assert (trial / "agent" / "calls.jsonl").read_text() == (trial / ".work" / "relay" / "calls.jsonl").read_text()
        assert len((trial / ".work" / "relay" / "bodies.jsonl").read_text().splitlines()) == 2
        # the agent's own log reads as a local run's: the driver's paths, not the node's
        stderr = (trial / "agent" / "stderr.txt").read_text()
        assert f"cwd {trial / '.work' / 'workspace'}" in stderr and "nullius-ray-" not in stderr
    report = harbor_reads(job)
    assert report["ok"] and report["checked"]["trajectories"] == 6, report["errors"][:3]
    merged = jobs / "spread-merged"
    done = run_cli(["merge", str(jobs / "spread-1"), str(jobs / "spread-2"), "-o", str(merged)], env)
    assert done.code == 0, done.output
    assert len(trials(merged)) == 12 and harbor_reads(merged)["ok"]
    assert no_agent_left(cluster) == []
    assert not list(cluster.root.glob("node*/nullius-ray-*"))  # each node's folder went with the run


def test_prove_holds_an_oracle_job_run_on_the_cluster(world):
    env, _ = world
    jobs = Path(env["NULLIUS_JOBS_DIR"])
    result = run_cli(["run", "gsm8k", "oracle", "--backend", "ray", "--limit", "4", "--job-name", "oracle-ray"], env, timeout=RUN_SECONDS)
    assert result.code == 0, result.output
    assert json.loads((jobs / "oracle-ray" / "config.json").read_text())["standard"]["backend"]["name"] == "ray"
    proved = run_cli(["prove", "gsm8k", "--limit", "4", "--job", f"oracle={jobs / 'oracle-ray'}", "--jobs-dir", str(jobs / "prove")], env,
                     timeout=RUN_SECONDS)
    assert proved.code == 0, proved.output
    assert "gsm8k/test oracle: passed 4/4" in proved.stdout


def test_a_run_with_no_cluster_at_its_address_is_refused_saying_so(world):
    env, fake = world
    dead = f"127.0.0.1:{free_port()}"
    result = run_cli(agent_run(fake, "--limit", "1", "--job-name", "nowhere"), {**env, "NULLIUS_RAY_ADDRESS": dead}, timeout=RUN_SECONDS)
    assert result.code == 2, result.output
    assert f"no Ray cluster reachable at '{dead}'" in result.stderr and "Traceback" not in result.stderr
    assert "Unclosed" not in result.output  # the run's relay, started before the backend refused, is stopped
    assert not (Path(env["NULLIUS_JOBS_DIR"]) / "nowhere").exists()


def test_a_guards_stop_line_reaches_the_nodes_relay_and_refuses_the_agents_calls(world, tmp_path):
    """The core's `faulty` benchmark, mode=guarded: its setup writes a guard's line; the node's relay refuses every call."""
    env, fake = world
    catalogue = tmp_path / "catalogue"
    shutil.copytree(REPO / "tests" / "fixtures" / "catalogue", catalogue)
    fake.clear()
    ran = run_cli(["run", "faulty", "scripted", "--model", "fake-1", "--provider", "openai-compatible", "--base-url", fake.openai_base_url,
                   "--unsandboxed", "--backend", "ray", "--job-name", "guarded", "--limit", "2", "--bench-option", "mode=guarded"],
                  {**env, "NULLIUS_CATALOGUE": str(catalogue)}, timeout=RUN_SECONDS)
    assert ran.code == 0, ran.output
    assert fake.requests == []  # refused on the node, unsent
    for name, result in trials(Path(env["NULLIUS_JOBS_DIR"]) / "guarded").items():
        assert result["standard"]["stopped"] == "guard: the unit's answer was given away"
        calls = [json.loads(line) for line in (Path(env["NULLIUS_JOBS_DIR"]) / "guarded" / name / "agent" / "calls.jsonl").read_text().splitlines()]
        assert calls and all(c["status"] == 403 and c["refused"].startswith("stopped: guard:") for c in calls)
    fake.use(SCRIPT)


def test_the_ray_backend_keeps_the_backend_contract_but_the_workspace_seen_while_the_agent_runs(cluster, world, tmp_path,
                                                                                                 monkeypatch):
    """Every rule but one: the agent's files come back when its room closes (before the checks), not while it runs."""
    from nullius_backend_ray.backend import RayBackend
    from nullius_core.testing.backend_contract import check_backend

    env, _ = world
    monkeypatch.setenv("NULLIUS_RAY_ADDRESS", cluster.address)
    assert check_backend(RayBackend, tmp_path, env) == ["what the agent wrote in its working folder is not in the unit's workspace here"]
    assert (tmp_path / "job" / "u0000" / "workspace" / "contract.txt").read_text() == "hello from the engine\n"  # back once closed


def wait_for(what: str, check, seconds: float = RUN_SECONDS):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"never: {what}")


def test_a_killed_node_loses_only_its_units_in_flight_and_resume_runs_them_again(cluster, world):
    """Last: it leaves the cluster a node short. The model answers slowly, so units are in flight when nodeB's raylet dies."""
    env, fake = world
    slow = {"rules": [{**rule, "reply": {**rule["reply"], "fault": {"first_byte_delay": 2}}} for rule in SCRIPT["rules"]]}
    fake.use(slow)
    jobs = Path(env["NULLIUS_JOBS_DIR"])
    job = jobs / "killed"
    args = [sys.executable, "-m", "nullius_core", *agent_run(fake, "--limit", "9", "-j", "6", "--job-name", "killed")]
    run = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # a unit has started on nodeB: its folder there, in nodeB's own TMPDIR
        wait_for("a unit on nodeB", lambda: list(cluster.tmpdirs["nodeB"].glob("nullius-ray-*/u*/workspace/.git")))
        node_b = resource_nodes(job)["nodeB"]
        os.kill(cluster.raylet_of(node_b), 9)
        out, err = run.communicate(timeout=RUN_SECONDS)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 0, err
    ran = trials(job)
    lost = {name: r for name, r in ran.items() if r.get("exception_info") is not None}
    assert lost, err
    for result in lost.values():
        info = result["exception_info"]
        assert info["exception_type"] == "NodeLostError" and node_b[:12] in info["exception_message"]
        assert result.get("verifier_result") is None
    kept = {name: r for name, r in ran.items() if name not in lost}
    assert all(scored(r) for r in kept.values())
    summary = json.loads((job / "result.json").read_text())["standard"]
    assert summary["errors"] == {"NodeLostError": len(lost)}
    wait_for("the killed node's agents ended by its watcher", lambda: no_agent_left(cluster) == [], 60)
    # --resume runs the lost units again, on the nodes left; the job's rewards are whole
    fake.use(SCRIPT)
    resumed = run_cli(["run", "--resume", str(job), "--base-url", fake.openai_base_url, "--unsandboxed"], env, timeout=RUN_SECONDS)
    assert resumed.code == 0, resumed.output
    again = trials(job)
    assert len(again) == 9 and all(scored(r) for r in again.values())
    assert {node_of(again[name]) for name in lost} <= set(resource_nodes(job).values()) - {node_b}
    assert sorted(p.name.rsplit(".", 1)[0] for p in (job / ".work" / "earlier").iterdir()) == sorted(lost)
    assert harbor_reads(job)["ok"]


def test_the_key_is_nowhere_in_rays_folders_nor_the_nodes(cluster, world):
    """After every run of the module: Ray's session folder (logs, spilled objects, runtime env files) and each node's TMPDIR."""
    from nullius_core.testing.backend_contract import KEY as CONTRACT_KEY  # the contract's run sent its own

    found = []
    for path in cluster.root.rglob("*"):
        try:
            if path.is_file() and not path.is_symlink() and any(k.encode() in path.read_bytes() for k in (KEY, CONTRACT_KEY)):
                found.append(str(path))
        except OSError:
            continue
    assert list(cluster.temp.glob("session_*/logs/*")), "Ray wrote no logs: nothing was searched"
    assert found == []
