"""BFCL end to end through Nullius: `nullius prove` on a single-turn and a multi-turn category, and the
reference agent, played by the fake model, making its calls over the benchmark's MCP server.

Everything but the model is real: the driver's environment as the core
installs it (driver.install, bfcl-eval with --no-deps), the driver, the MCP
server and BFCL's backends, the reference agent over ACP, the relay. The
installs go to the shared STANDARD_DIR (`nullius_installs`: by digest,
locked), made once and then reused by every session.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from bfcl_harness import HERE

from nullius_core.testing import isolated_env, run_cli

KEY = "sk-upstream-held-by-the-relay-bfcl-0123456789"

PLAYS = """
import json, sys
sys.path.insert(0, sys.argv[1])
from nullius_bfcl.data import Category
from nullius_bfcl import multi, oracle
category = Category(sys.argv[2], sys.argv[3])
out = []
for unit in sys.argv[4].split(","):
    entry, answer = category.entry(unit), category.answers.get(unit)
    turns = multi.oracle_calls(entry, answer) if category.multi_turn else [oracle.calls(entry, answer, sys.argv[2])]
    first = multi.messages(entry)[0] if category.multi_turn else entry["question"][0][-1]["content"]
    out.append({"unit": unit, "prompt": first, "turns": turns})
print(json.dumps(out))
"""


def plays(env: dict, installs: Path, category: str, units: list[str]) -> list[dict]:
    """The oracle's calls of these units, computed by the driver's own code in its installed environment."""
    python = next(installs.glob("drivers/bfcl/*/.venv/bin/python"))
    data = next(Path(env["STANDARD_DATA_DIR"]).glob(f"bfcl/{category}/*/*.json"))
    done = subprocess.run([str(python), "-c", PLAYS, str(HERE), category, str(data), ",".join(units)],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_prove_a_single_turn_and_a_multi_turn_category(tmp_path, nullius_installs):
    env = {**isolated_env(tmp_path / "nullius", standard_dir=nullius_installs), "NULLIUS_JOBS_DIR": str(tmp_path / "jobs")}
    for dataset, limit in (("live_parallel", "3"), ("multi_turn_base", "2")):
        proved = run_cli(["prove", "bfcl", "--dataset", dataset, "--limit", limit, "--json"], env)
        assert proved.code == 0, proved.output
        checks = json.loads(proved.stdout)[dataset]
        assert checks["units"]["passed"].startswith(f"{json.loads((HERE / 'standard.json').read_text())['datasets'][dataset]['units']} ids")
        assert checks["nop"]["passed"] == f"0/{limit}" and checks["oracle"]["passed"] == f"{limit}/{limit}", checks
        assert checks["leak"]["ok"] is True, checks


def test_the_reference_agent_calls_the_tools_and_bfcl_scores_the_calls(tmp_path, fake_model, nullius_installs):
    from nullius_bench_bfcl.agent_player import plays as player

    env = {**isolated_env(tmp_path / "nullius", standard_dir=nullius_installs), "NULLIUS_JOBS_DIR": str(tmp_path / "jobs"),
           "OPENAI_COMPATIBLE_API_KEY": KEY}
    first = run_cli(["run", "bfcl", "nop", "--dataset", "multi_turn_base", "--limit", "1", "--job-name", "nop"], env)
    assert first.code == 0, first.output  # installs the driver and fetches the data
    assert run_cli(["run", "bfcl", "nop", "--dataset", "simple_python", "--limit", "1", "--job-name", "nop2"], env).code == 0
    known = (plays(env, nullius_installs, "simple_python", ["simple_python_0", "simple_python_1"])
             + plays(env, nullius_installs, "multi_turn_base", ["multi_turn_base_0"]))
    known[1]["turns"][0][0]["arguments"]["number"] = 6  # a wrong call: the factorial of 6, not 5
    fake_model.use(player(known))
    way = ["reference", "--model", "fake-model", "--provider", "openai-compatible", "--base-url", fake_model.openai_base_url,
           "--unsandboxed"]
    for dataset, limit in (("simple_python", "2"), ("multi_turn_base", "1")):
        result = run_cli(["run", "bfcl", *way, "--dataset", dataset, "--limit", limit, "--job-name", dataset], env)
        assert result.code == 0, result.output
    outcome = {p.parent.name: json.loads(p.read_text())["standard"]["outcome"] for p in (tmp_path / "jobs").glob("*/*/result.json")
               if p.parent.parent.name in ("simple_python", "multi_turn_base")}
    assert outcome == {"simple_python_0": "passed", "simple_python_1": "failed", "multi_turn_base_0": "passed"}, outcome
    wrong = json.loads((tmp_path / "jobs/simple_python/simple_python_1/verifier/score.json").read_text())
    assert wrong["detail"]["calls"] == [{"turn": 0, "tool": "math_factorial", "arguments": {"number": 6}}]
    assert "Invalid value for parameter 'number': 6" in json.dumps(wrong["detail"]["checker"]["error"])
    folder = tmp_path / "jobs/multi_turn_base/multi_turn_base_0"
    logged = [json.loads(line) for line in (folder / "verifier" / "mcp-calls.jsonl").read_text().splitlines()]
    expected = [c for turn in known[2]["turns"] for c in turn]
    assert [(c["tool"], c["arguments"]) for c in logged] == [(c["tool"], c["arguments"]) for c in expected]
    assert {c["turn"] for c in logged} == set(range(len(known[2]["turns"]))) - {k for k, t in enumerate(known[2]["turns"]) if not t}
    assert all(c["result"] != "The call is recorded." for c in logged)  # executed by BFCL's backends
