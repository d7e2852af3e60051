"""The reference agent, from its own distribution, proves three ports and runs real benchmarks (fake model, real relay)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT
from harbor.venv import ensure_harbor_python

from nullius_core.testing import isolated_env, processes_under, run_cli
from nullius_core.testing.fake_model import running_fake_model

PLAYER = "nullius_agent_reference.player"  # shipped in the reference agent's distribution
KEY = "sk-upstream-held-by-the-relay-0123456789"


@pytest.fixture(scope="module")
def world(tmp_path_factory, nullius_installs):
    """One home for the module; its installs (the reference agent, the kits' environments) in the session's STANDARD_DIR."""
    root = tmp_path_factory.mktemp("reference")
    env = {**isolated_env(root, standard_dir=nullius_installs), "OPENAI_COMPATIBLE_API_KEY": KEY}
    with running_fake_model(f"{PLAYER}:respond") as fake:
        yield env, fake, root


def model_args(fake):
    return ["--model", "fake-model", "--provider", "openai-compatible", "--base-url", fake.openai_base_url, "--unsandboxed"]


def _user_copy(env) -> list[Path]:
    catalogue = Path(env["XDG_CONFIG_HOME"]) / "nullius" / "catalogue"
    return list(catalogue.rglob("agent.json")) if catalogue.exists() else []


def _proofs_file(env) -> Path:
    return Path(env["XDG_CONFIG_HOME"]) / "nullius" / "catalogue" / "proofs" / "agents" / "reference.json"


def test_a_conform_against_a_dead_url_or_one_without_v1_proves_nothing_and_takes_nothing_back(world):
    """A configuration mistake is refused, naming its cause: the shipped proofs stand, nothing is written."""
    env, fake, _ = world
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    for url, kind in ((dead, "ApiConnectionError"), (fake.openai_base_url.removesuffix("/v1"), "ApiProviderResourceNotFoundError")):
        result = run_cli(["conform", "reference", "--model", "fake-model", "--provider", "openai-compatible", "--base-url", url,
                          "--unsandboxed"], env)
        assert result.code == 2, result.output
        assert "conform refused: the kit agent." in result.stderr and kind in result.stderr and "nothing of it is proven or taken back" in result.stderr
        assert _user_copy(env) == []  # no "nothing proven" copy shadows the plugin's definition
        assert not _proofs_file(env).exists()  # and no record takes the shipped proofs back
        fit = run_cli(["fit", "gsm8k", "--json"], env)
        assert "reference" in json.loads(fit.stdout)["fits"]  # the shipped proofs still stand


README = ROOT / "README.md"
ALL_PORTS = {"agent.task/v1", "agent.workspace/v1", "agent.conversation/v1", "agent.tools/v1"}


def readme_example() -> list[str]:
    """The command lines of the README's "Try a whole agent run without a key" block, as the README writes them."""
    text = README.read_text()
    after = text[text.index("Try a whole agent run without a key"):]
    block = after[after.index("```\n") + 4:]
    return [line for line in block[:block.index("```")].splitlines() if line.strip()]


@pytest.fixture(scope="module")
def readme_run(world):
    """The README's example run as written: its fake model in the background, its export, its conform with that model's URL."""
    import shlex
    import subprocess
    import sys

    env, _, root = world
    env = {**env, "PATH": f"{Path(sys.executable).parent}:{env['PATH']}"}  # `nullius` as a user's shell finds it
    del env["OPENAI_COMPATIBLE_API_KEY"]  # the README's own export sets it
    lines = readme_example()
    assert len(lines) == 3 and lines[0].endswith(" &") and lines[1].startswith("export ")
    server = subprocess.Popen(shlex.split(lines[0].removesuffix(" &")), env=env, stdout=subprocess.PIPE, text=True)
    try:
        url = json.loads(server.stdout.readline())["openai_base_url"]  # the line it prints once it listens
        name, _, value = lines[1].removeprefix("export ").partition("=")
        env[name] = value
        command = lines[2].replace("<its openai_base_url>", url)
        assert command != lines[2]
        done = subprocess.run(shlex.split(command), env=env, capture_output=True, text=True, timeout=1800)
    finally:
        server.terminate()
        server.wait(30)
    yield env, done


def test_the_readme_example_proves_the_reference_agent_as_written(readme_run):
    env, done = readme_run
    assert done.returncode == 0, done.stdout + done.stderr
    verdicts = dict(line.split(": ", 1) for line in done.stdout.splitlines() if line.startswith("reference "))
    assert {port.removeprefix("reference ") for port, v in verdicts.items() if v.startswith("proven")} == ALL_PORTS
    assert verdicts["reference agent.task/v1"] == "proven 3/3"


def test_the_reference_agent_proves_task_workspace_and_conversation(readme_run):
    env, _ = readme_run
    listed = json.loads(run_cli(["list", "--json"], env).stdout)
    reference = next(a for a in listed["agents"] if a["ref"] == "reference")
    assert set(reference["offers"]) == ALL_PORTS
    assert reference["offers"]["agent.tools/v1"]["skills"] == ["chain", "decoys", "retry"]
    # the plugin's definition is the one in use; its proofs come from the proofs file beside it
    assert reference["source"].startswith("plugin reference (nullius-agent-reference") and reference["shadows"] is None
    assert reference["proofs"]["from"] == "proofs file" and reference["proofs"]["file"] == str(_proofs_file(env))
    assert _user_copy(env) == []
    [record] = json.loads(_proofs_file(env).read_text())["records"]
    assert set(record["proven"]) == ALL_PORTS and record["digest"] == reference["proofs"]["digest"]
    tools = record["proven"]["agent.tools/v1"]
    assert tools["kit_version"] == 2 and tools["passed"] == "2/2" and tools["model"] == "fake-model"
    assert {name: skill["ok"] for name, skill in tools["skills"].items()} == {"decoys": True, "chain": True, "retry": True}
    log = Path(env["NULLIUS_JOBS_DIR"]) / tools["job"] / "chain" / "verifier" / "mcp-calls.jsonl"
    assert [json.loads(line)["tool"] for line in log.read_text().splitlines()] == ["locate_parcel", "shift_lead", "radio_call_sign"]
    workspace_job = Path(env["NULLIUS_JOBS_DIR"]) / record["proven"]["agent.workspace/v1"]["job"]
    steps = json.loads((workspace_job / "fix-bug" / "agent" / "trajectory.json").read_text())["steps"]
    calls = [s["tool_calls"][0]["function_name"].split()[0] for s in steps if s.get("tool_calls")]
    assert calls == ["read_file", "read_file", "write_file"]  # it really read and wrote through its own tools
    config = json.loads((workspace_job / "config.json").read_text())["standard"]["agent"]
    assert config["source"] == reference["source"] and config["proofs"]["from"] in ("definition", "proofs file")
    fit = json.loads(run_cli(["fit", "gsm8k", "--json"], env).stdout)
    assert "reference" in fit["fits"] and fit["sources"]["reference"]["proofs"]["from"] == "proofs file"


def test_a_model_that_answers_wrongly_proves_nothing(world, readme_run):
    env, fake, _ = world
    fake.use(f"{PLAYER}:respond_wrongly")
    result = run_cli(["conform", "reference", *model_args(fake), "--json", "--port", "agent.workspace/v1"], env)
    assert result.code == 1
    [row] = json.loads(result.stdout)
    assert row["passed"] == "0/2" and not row["proven"]
    # taken back in the proofs file: its failing proof hides the shipped one
    [record] = json.loads(_proofs_file(env).read_text())["records"]
    assert record["proven"]["agent.workspace/v1"]["passed"] == "0/2"
    listed = json.loads(run_cli(["list", "--json"], env).stdout)
    reference = next(a for a in listed["agents"] if a["ref"] == "reference")
    assert set(reference["offers"]) == ALL_PORTS - {"agent.workspace/v1"}


def test_reference_runs_gsm8k_and_humaneval_into_jobs_harbor_reads(world):
    env, fake, root = world
    fake.use({"default": {"text": "#### 18"}})
    jobs = Path(env["NULLIUS_JOBS_DIR"])
    for bench in ("gsm8k", "humaneval"):
        result = run_cli(["run", bench, "reference", *model_args(fake), "--limit", "3", "--job-name", f"ref-{bench}"], env)
        assert result.code == 0, result.output
        trials = [json.loads(p.read_text()) for p in (jobs / f"ref-{bench}").glob("*/result.json")]
        assert len(trials) == 3 and all(t.get("exception_info") is None for t in trials)
        assert all(t["agent_result"]["n_input_tokens"] > 0 for t in trials)
        done = subprocess.run([str(ensure_harbor_python()), str(ROOT / "tests" / "harbor" / "validate_job.py"), str(jobs / f"ref-{bench}")],
                              capture_output=True, text=True, timeout=300)
        report = json.loads(done.stdout)
        assert report["ok"] and report["checked"]["trajectories"] == 3, report["errors"][:3]
    first = json.loads((jobs / "ref-gsm8k" / "u0000" / "verifier" / "score.json").read_text())
    assert first["passed"] is True  # the first problem's answer is 18


def test_a_run_cancelled_mid_turn_leaves_no_agent_and_no_mcp_server(world):
    import signal
    import sys
    import time

    env, fake, root = world
    fake.use({"default": {"text": "late", "fault": {"first_byte_delay": 60}}})
    fake.clear()
    args = [sys.executable, "-m", "nullius_core", "conform", "reference", *model_args(fake), "--port", "agent.tools/v1"]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    def ours() -> list[str]:
        # the agent and the kit's server run from the installs, which other workers' tests run too: this run's have root
        # in their environment (processes_under)
        return [line for line in processes_under(root) if "mcp_kit.py" in line or "reference/agent.py" in line]

    try:
        deadline = time.monotonic() + 300  # the kit's environment may be installed first
        while time.monotonic() < deadline and not (fake.requests and any("mcp_kit.py" in line for line in ours())):
            time.sleep(0.2)
        assert any("mcp_kit.py" in line for line in ours()), "the kit's MCP server never started"
        assert fake.requests, "the agent never called the model"  # the turn is under way: the model's first byte is a minute off
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and ours():
        time.sleep(0.2)
    assert ours() == []


SECRET = "the machine's own file, never the job's 5f3c9e"


def test_no_check_reads_through_a_link_the_agent_planted(world, tmp_path):
    from fixtures.models.planter import run_planted

    env, fake, _ = world
    files, taken, leaked = run_planted(env, fake, tmp_path, SECRET, model_args(fake), "planted")
    assert files["real.txt"] == files["ok.txt"] == "inside\n"  # a link that stays inside is left, and read
    assert "taken out before the check" in files["answer.txt"] and "taken out before the check" in files["hard.txt"]
    assert taken == {"answer.txt": "a symbolic link", "d/all": "a symbolic link", "up": "a symbolic link", "hard.txt": "a hard link"}
    assert not leaked  # no byte of it is in the job
