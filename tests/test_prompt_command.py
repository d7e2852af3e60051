"""`nullius prompt BENCH UNIT...` (each unit's prompt from its driver's setup, no run) and `nullius list --json`'s agents' `variant`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nullius_core.testing import run_cli

ROOT = Path(__file__).resolve().parent.parent
CATALOGUE = ROOT / "tests" / "fixtures" / "catalogue"


@pytest.fixture
def env(nullius_env):
    return {**nullius_env, "NULLIUS_CATALOGUE": str(CATALOGUE)}


def test_prompt_gives_each_units_setup_prompt(env, tmp_path):
    done = run_cli(["prompt", "faulty", "u0001", "u0000", "--json"], env, cwd=tmp_path / "nullius")
    assert done.code == 0, done.output
    assert json.loads(done.stdout) == {"u0001": "Say bravo.", "u0000": "Say alpha."}
    assert not Path(env["NULLIUS_JOBS_DIR"]).exists()  # no run, no job
    plain = run_cli(["prompt", "faulty", "u0002"], env)
    assert plain.code == 0 and plain.stdout == "== u0002\nSay charlie.\n\n"


def test_prompt_refuses_a_unit_the_dataset_lacks_and_a_failing_setup(env):
    missing = run_cli(["prompt", "faulty", "u0000", "u0099"], env)
    assert missing.code == 2 and "no unit u0099 in dataset test" in missing.stderr and "Traceback" not in missing.output
    broken = run_cli(["prompt", "faulty", "u0000", "--bench-option", "mode=broken"], env)
    assert broken.code == 2 and "prompt refused: faulty: driver op 'setup'" in broken.stderr


def test_list_says_where_each_agents_variant_files_go(nullius_env):
    done = run_cli(["list", "--json"], nullius_env, in_process=True)
    agents = {a["ref"]: a for a in json.loads(done.stdout)["agents"]}
    assert agents["reference"]["variant"]["instructions"] == {"file": "AGENTS.md", "root": "workspace", "path": None}
    assert agents["reference"]["variant"]["skills"] == {"path": ".agents/skills", "root": "workspace"}
