"""Issue 16's whole flow on HumanEval: two variants of the reference agent, each job assessed three times by Claude
Agent ACP as the judge, then `nullius compare` (cost table, paired statistics, the Pareto picture) and `nullius export`.

One fake model stands in for both models: the reference agent's (Chat Completions), which answers each problem
with its canonical solution (taken from the oracle's own job) when the variant's AGENTS.md says to be careful,
and only the first problem when it does not, so the two variants really differ; and the judge's (Anthropic
Messages, through Claude Agent ACP from npm), played by nullius_judge.player. Everything else is real: the
variants staged into each unit, the relay on every route, HumanEval's own scorer, the judge started by Nullius,
the statistics and the files.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from nullius_core.testing import files_holding, isolated_env, processes_under, run_cli
from nullius_core.testing.chat import read_chat
from nullius_core.testing.fake_model import Reply, running_fake_model
from nullius_judge import player as judge_player

KEY = "sk-upstream-held-by-the-relay-flow-0123456789"
RUBRIC = {"dimensions": [
    {"name": "correctness", "title": "Correctness", "max_score": 10, "description": "Does the function do what its docstring says?"},
    {"name": "clarity", "title": "Clarity", "max_score": 5, "description": "Is the code plain to read?"},
]}
UNITS = 3

pytestmark = pytest.mark.slow


def _solutions(oracle_job: Path) -> dict[str, str]:
    """Each problem's code block (as the prompt shows it) -> the full function: the prompt's code and the oracle's body."""
    out = {}
    for trajectory in oracle_job.glob("*/agent/trajectory.json"):
        steps = json.loads(trajectory.read_text())["steps"]
        code = re.search(r"```python\n(.*?)```", steps[0]["message"], re.S).group(1)
        out[code] = code + steps[1]["message"]
    return out


def _script(solutions: dict[str, str]):
    first = sorted(solutions)[0]

    def respond(request):
        if judge_player.judge_prompt(request) is not None:
            return judge_player.respond(request)
        chat = read_chat(request.body)
        code = next((c for c in solutions if c in chat.context), None)
        if code is None:
            return None
        careful = "CAREFUL-VARIANT" in chat.context  # the variant's AGENTS.md, in the reference agent's system prompt
        if careful or code == first:
            return Reply(text="```python\n" + solutions[code] + "```")
        return Reply(text="```python\ndef nothing():\n    pass\n```")
    return respond


def _variant(root: Path, name: str, instructions: str) -> Path:
    folder = root / "variants" / name
    folder.mkdir(parents=True)
    (folder / "variant.toml").write_text('agent = "reference"\nmodel = "fake-model"\n')
    (folder / "AGENTS.md").write_text(instructions + "\n")
    return folder


def test_two_variants_judged_by_claude_compared_and_exported(tmp_path, nullius_installs):
    if shutil.which("npm") is None:
        pytest.fail("npm must be on PATH: Claude Agent ACP is installed from the npm registry")
    env = {**isolated_env(tmp_path / "home", standard_dir=nullius_installs), "NULLIUS_JOBS_DIR": str(tmp_path / "jobs"),
           "OPENAI_COMPATIBLE_API_KEY": KEY, "ANTHROPIC_API_KEY": KEY}
    for name in ("ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        env.pop(name, None)
    jobs = tmp_path / "jobs"
    oracle = run_cli(["run", "humaneval", "oracle", "--limit", str(UNITS), "--job-name", "oracle"], env)
    assert oracle.code == 0, oracle.output
    careful = _variant(tmp_path, "careful", "CAREFUL-VARIANT: test every function against its docstring before you answer.")
    hasty = _variant(tmp_path, "hasty", "HASTY-VARIANT: answer at once.")
    rubric = tmp_path / "rubric.json"
    rubric.write_text(json.dumps(RUBRIC))

    with running_fake_model(_script(_solutions(jobs / "oracle"))) as fake:
        ran = run_cli(["run", "humaneval", "--all-variants", str(careful), "--all-variants", str(hasty), "--limit", str(UNITS),
                       "--provider", "openai-compatible", "--base-url", fake.openai_base_url, "--unsandboxed",
                       "--job-name", "flow"], env)
        assert ran.code in (0, 1), ran.output  # a failed unit is a scored outcome
        made = {p.parent.name: p.parent for p in jobs.glob("flow*/result.json")}
        assert sorted(made) == ["flow__careful", "flow__hasty"], made
        assert "careful" in ran.stderr and "hasty" in ran.stderr  # the table per configuration
        for job in made.values():
            judged = run_cli(["assess", str(job), "--judge", "claude", "--model", "fake-claude-judge", "--provider", "anthropic",
                              "--base-url", fake.openai_base_url, "--unsandboxed", "--rubric", str(rubric),
                              "--eval-repetitions", "3", "--max-concurrent-eval", "2"], env, timeout=1800)
            if "cannot be installed" in judged.output:
                pytest.fail("Claude Agent ACP could not be installed from the npm registry:\n" + judged.output[-3000:])
            assert judged.code == 0, judged.output

    rewards = {}
    for name, job in made.items():
        rewards[name] = {}
        for trial in sorted(p.parent for p in job.glob("u*/result.json")):
            evals = sorted(trial.glob("assessment_eval_*.json"))
            assert len(evals) == 3 and all(json.loads(e.read_text())["judge"]["agent"] == "claude" for e in evals)
            summary = json.loads((trial / "assessment_summary.json").read_text())
            assert summary["dominant"]["judge_model"] == "fake-claude-judge"
            result = json.loads((trial / "result.json").read_text())
            assert result["standard"]["variant"]["name"] == name.split("__")[1]
            rewards[name][trial.name] = result["verifier_result"]["rewards"]["reward"]
    assert list(rewards["flow__careful"].values()) == [1.0] * UNITS
    assert sum(rewards["flow__hasty"].values()) == 1.0  # the first problem only

    out = tmp_path / "compare"
    compared = run_cli(["compare", str(made["flow__careful"]), str(made["flow__hasty"]), "--out", str(out), "--json"], env)
    assert compared.code == 0, compared.output
    report = json.loads(compared.stdout)
    assert (out / "pareto.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and "<svg" in (out / "pareto.svg").read_text()
    assert {r["variant"] for r in report["rows"]} == {"careful", "hasty"}
    paired = report["paired"][0]
    assert (paired["wins"], paired["losses"], paired["ties"]) == (2, 0, 1)  # careful passes the two hasty fails
    assert abs(paired["mean_difference"] - 2 / 3) < 1e-9 and paired["mcnemar"]["only_a"] == 2 and paired["mcnemar"]["only_b"] == 0
    assert abs(paired["mcnemar"]["p"] - 0.5) < 1e-9  # exact: 2 * 0.5**2
    text = run_cli(["compare", str(made["flow__careful"]), str(made["flow__hasty"]), "--out", str(tmp_path / "again")], env)
    assert text.code == 0 and "McNemar" in text.output, text.output

    exported = run_cli(["export", str(made["flow__careful"]), str(made["flow__hasty"]), "--to", str(tmp_path / "export")], env)
    assert exported.code == 0, exported.output
    flat = [p for p in (tmp_path / "export").rglob("metrics.json")]
    assert len(flat) == 2 * UNITS
    for metrics in flat:
        trial = metrics.parent
        assert len(list(trial.glob("assessment_eval_*.json"))) == 3 and (trial / "assessment_summary.json").is_file()
        assert (trial / "trajectory.json").is_file()
    assert files_holding(tmp_path, KEY.encode()) == []
    assert processes_under(tmp_path) == []
