"""`nullius fidelity codex`: Codex over ACP against Codex's own CLI (`codex exec`), both installed from npm, the fake model playing.

The module shares one isolated home, so the npm installs happen once.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from nullius_agent_codex import plugin
from nullius_core.testing import isolated_env, processes_under, run_cli
from nullius_core.testing.fake_model import running_fake_model

PLAYER = "nullius_agent_codex.player"
KEY = "sk-upstream-held-by-the-relay-0123456789"
MODEL = "fake-codex"
# The fixed words of the workspace kit's two prompts (their seeded words differ at every setup).
PROMPT_TEXT = [b"create the file notes/", b"does not do what README.md says it must"]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, nullius_installs: Path):
    root = tmp_path_factory.mktemp("codex-fidelity")
    env = isolated_env(root, standard_dir=nullius_installs)
    for name in [k for k in env if k.startswith(("OPENAI_", "ANTHROPIC_", "OPENROUTER_", "CODEX_"))]:
        del env[name]
    env["OPENAI_API_KEY"] = KEY  # the relay's; never the agent's or the CLI's
    with running_fake_model(f"{PLAYER}:respond") as fake:
        yield env, fake, root
    assert processes_under(root) == []



def fidelity(world: Any, agent: str) -> tuple[Any, dict[str, Any], float]:
    env, fake, _ = world
    started = time.monotonic()
    result = run_cli(["fidelity", agent, "--model", MODEL, "--provider", "openai", "--base-url", fake.openai_base_url,
                      "--unsandboxed", "--json"], env, timeout=600)
    assert result.stdout.strip(), result.output
    return result, json.loads(result.stdout.strip().splitlines()[-1]), time.monotonic() - started


def files_holding(folder: Path, needle: bytes) -> list[str]:
    return [str(p) for p in folder.rglob("*")
            if p.is_file() and not p.is_symlink() and "node_modules" not in p.parts and needle in p.read_bytes()]


def test_codex_over_acp_sends_what_codex_exec_sends(world):
    env, fake, root = world
    fake.clear()
    result, verdict, seconds = fidelity(world, "codex")
    assert result.code == 0, result.output
    assert verdict["verdict"] == "same" and verdict["fields"] == []
    assert verdict["passed"] == {"acp": "4/4", "cli": "4/4"}, verdict  # both ways really did the kit's work
    record = json.loads((Path(verdict["record"]) / "fidelity.json").read_text())
    assert record["command"] == "codex exec --skip-git-repo-check --json -- {prompt}"
    for way in ("acp", "cli"):
        assert len(record["runs"][way]) == 2 and set(record["runs"][way][0]) == {"write-file", "fix-bug"}
        first = record["runs"][way][0]["write-file"]
        assert first["requests"] >= 2 and first["configuration"]["reasoning.effort"] == ["medium"]
        assert "tools[exec_command]" in first["configuration"] and first["first"]["input"] >= 1
        assert all(v.startswith("sha256:") for k, v in first["first"].items() if k != "input")
    # the model saw both ways: 4 runs of each unit, none of the CLI's runs without requests
    assert sum(1 for r in fake.requests if r.body.get("input")) >= 2 * 2 * (2 + 4)
    # the verdict is written as a plugin's proofs are: beside its definition, in the user catalogue's proofs file
    proofs = json.loads((root / "config" / "nullius" / "catalogue" / "proofs" / "agents" / "codex.json").read_text())
    written = proofs["records"][0]["proven"]["fidelity"]
    assert written["verdict"] == "same" and written["model"] == MODEL and written["version"] == "0.16.0"
    # the prompt's text is nowhere in what the runs left
    for needle in PROMPT_TEXT:
        assert not files_holding(root, needle), needle
    assert seconds < 300, f"fidelity took {seconds:.0f} s"


def own_copy(root: Path, key: str, command: str) -> Path:
    """A user's own copy of the codex definition whose CLI template is `command`."""
    mine = root / "config" / "nullius" / "catalogue" / "agents" / key
    shutil.copytree(plugin.CATALOGUE / "agents" / "codex", mine)
    definition = json.loads((mine / "agent.json").read_text())
    definition.pop("proven")
    definition["fidelity"]["command"] = command
    (mine / "agent.json").write_text(json.dumps(definition, indent=2))
    return mine


def test_a_cli_template_that_sets_another_effort_differs_and_names_the_field(world):
    env, fake, root = world
    mine = own_copy(root, "codex-high", "codex exec --skip-git-repo-check --json -c model_reasoning_effort=high -- {prompt}")
    result, verdict, _ = fidelity(world, "codex-high")
    assert result.code == 1, result.output
    assert verdict["verdict"] == "differs" and "reasoning.effort" in verdict["fields"], verdict
    # a user's own definition is written itself
    written = json.loads((mine / "agent.json").read_text())["proven"]["fidelity"]
    assert written["verdict"] == "differs" and "reasoning.effort" in written["fields"]
    text = run_cli(["fidelity", "codex-high", "--model", MODEL, "--provider", "openai", "--base-url", fake.openai_base_url,
                    "--unsandboxed"], env, timeout=600)
    assert text.code == 1 and "codex-high: differs: " in text.stdout and "reasoning.effort" in text.stdout, text.output
    checked = run_cli(["check", str(mine / "agent.json")], env)
    assert checked.code == 0, checked.output  # proven.fidelity is a valid entry of proven
    for needle in PROMPT_TEXT:
        assert not files_holding(root, needle), needle


def test_a_cli_template_that_adds_a_system_prompt_differs_in_each_units_first_item(world):
    _, _, root = world
    own_copy(root, "codex-brief", 'codex exec --skip-git-repo-check --json -c developer_instructions="Be brief." -- {prompt}')
    result, verdict, _ = fidelity(world, "codex-brief")
    assert result.code == 1, result.output
    # Codex sends developer instructions as the first input item, not in `instructions`
    assert verdict["fields"] == ["fix-bug: input[0]", "write-file: input[0]"], verdict
    assert verdict["passed"] == {"acp": "4/4", "cli": "4/4"}


def test_an_agent_without_a_fidelity_command_is_refused(world):
    env, fake, root = world
    mine = root / "config" / "nullius" / "catalogue" / "agents" / "codex-bare"
    shutil.copytree(plugin.CATALOGUE / "agents" / "codex", mine)
    definition = json.loads((mine / "agent.json").read_text())
    definition.pop("fidelity")
    (mine / "agent.json").write_text(json.dumps(definition, indent=2))
    result = run_cli(["fidelity", "codex-bare", "--model", MODEL, "--provider", "openai", "--base-url", fake.openai_base_url,
                      "--unsandboxed"], env, timeout=120)
    assert result.code == 2, result.output
    assert "codex-bare has no fidelity.command in its definition" in result.output and "Traceback" not in result.output


def test_ctrl_c_ends_every_run_and_writes_no_verdict(world):
    env, fake, root = world
    key = "codex-stopped"
    mine = own_copy(root, key, "codex exec --skip-git-repo-check --json -- {prompt}")
    command = [sys.executable, "-m", "nullius_core", "fidelity", key, "--model", MODEL, "--provider", "openai",
               "--base-url", fake.openai_base_url, "--unsandboxed"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    for line in process.stderr:  # the first run is done: the second has begun
        if "stage=fidelity unit=write-file way=acp round=1" in line:
            break
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130 and "cancelled: nothing is recorded" in err, err
    assert "proven" not in json.loads((mine / "agent.json").read_text())
    assert not list((root / "jobs").glob(f"*__fidelity__{key}__*"))
    # this run's processes (root in their environment: another worker may be running a fidelity of its own)
    assert [p for p in processes_under(root) if "nullius-fidelity-" in p] == []


def test_a_cli_not_on_path_is_refused_naming_it(world):
    env, fake, root = world
    own_copy(root, "codex-missing", "no-such-codex exec -- {prompt}")
    result = run_cli(["fidelity", "codex-missing", "--model", MODEL, "--provider", "openai", "--base-url", fake.openai_base_url,
                      "--unsandboxed"], env, timeout=300)
    assert result.code == 2, result.output
    assert "fidelity.command starts 'no-such-codex', which is not on its PATH" in result.output and "Traceback" not in result.output
