"""examples/harbor-tasks (22 offline Harbor tasks) as the benchmark `harbor`: prove lints it, the reference agent and Claude Agent ACP run it.

The whole folder's proof (`nullius prove harbor --dataset examples/harbor-tasks`
passes every check) is quoted in the plugin's README; here a copy with one
broken oracle and one test that an empty agent passes is proven, and prove
must name exactly those two, while the two tasks as they ship pass. The
agents are played by the fake model, which answers without doing anything:
every task is run, checked and scored 0, every call through the relay.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from nullius_core.testing import run_cli

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples" / "harbor-tasks"
RUN_SECONDS = 2400
ALWAYS = "#!/bin/bash\nmkdir -p /logs/verifier\necho 1 > /logs/verifier/reward.txt\n"


def checks(stdout: str, dataset: str) -> dict[str, str]:
    prefix = f"harbor/{dataset} "
    return {line[len(prefix):].split(":", 1)[0]: line.split(": ", 1)[1] for line in stdout.splitlines() if line.startswith(prefix)}


def test_prove_names_exactly_the_broken_oracle_and_the_test_an_empty_agent_passes(harbor_world, tmp_path):
    env, _, _ = harbor_world
    broken = tmp_path / "tasks-broken"
    shutil.copytree(EXAMPLES, broken)
    (broken / "fix-semver-order" / "solution" / "solve.sh").write_text("#!/bin/bash\necho 'a broken oracle' >&2\nexit 1\n")
    (broken / "sales-summary-csv" / "tests" / "test.sh").write_text(ALWAYS)
    result = run_cli(["prove", "harbor", "--dataset", str(broken), "-j", "4"], env, timeout=RUN_SECONDS)
    assert result.code == 1, result.output
    found = checks(result.stdout, "tasks-broken")
    assert found["units"].startswith("passed 22 ids") and found["leak"] == "passed 22/22"
    assert found["oracle"] == "FAILED mean 0.9545 over 22 failing: fix-semver-order"
    assert found["nop"] == "FAILED mean 0.0455 over 22 passing: sales-summary-csv"

    shipped = tmp_path / "tasks-shipped"
    for name in ("fix-semver-order", "sales-summary-csv"):
        shutil.copytree(EXAMPLES / name, shipped / name)
    result = run_cli(["prove", "harbor", "--dataset", str(shipped)], env, timeout=RUN_SECONDS)
    assert result.code == 0, result.output
    assert checks(result.stdout, "tasks-shipped") == {"units": "passed 2 ids, the same twice, unique", "leak": "passed 2/2",
                                                      "nop": "passed mean 0.0000 over 2", "oracle": "passed mean 1.0000 over 2"}


def agent_run(env: dict, fake, agent: str, dataset: Path, job: str, model: str, provider: str, base_url: str) -> dict[str, dict]:
    result = run_cli(["run", "harbor", agent, "--dataset", str(dataset), "--model", model, "--provider", provider, "--base-url", base_url,
                      "--backend", "docker", "-j", "4", "--job-name", job], env, timeout=RUN_SECONDS)
    assert result.code == 0, result.output
    folder = Path(env["NULLIUS_JOBS_DIR"]) / job
    return {p.parent.name: json.loads(p.read_text()) for p in folder.glob("*/result.json")}


def assert_ran_and_scored(found: dict[str, dict], names: list[str], job: Path, key: str) -> None:
    assert sorted(found) == sorted(names)
    for name, trial in found.items():
        assert trial.get("exception_info") is None, (name, trial.get("exception_info"))
        assert trial["verifier_result"]["rewards"]["reward"] == 0.0, name  # a model that does nothing solves nothing
        assert (job / name / "agent" / "calls.jsonl").read_text().strip(), name  # every call through the unit's relay
    leaked = [str(p) for p in job.rglob("*") if p.is_file() and key.encode() in p.read_bytes()]
    assert leaked == []


def test_the_reference_agent_and_claude_agent_acp_run_the_examples_on_docker(harbor_world, tmp_path):
    env, fake, _ = harbor_world
    names = sorted(p.name for p in EXAMPLES.iterdir() if (p / "task.toml").is_file())
    jobs = Path(env["NULLIUS_JOBS_DIR"])
    found = agent_run(env, fake, "reference", EXAMPLES, "examples-reference", "fake-model", "openai-compatible", fake.openai_base_url)
    assert_ran_and_scored(found, names, jobs / "examples-reference", env["OPENAI_COMPATIBLE_API_KEY"])
    steps = json.loads((jobs / "examples-reference" / "ledger-cli-steps" / "verifier" / "score.json").read_text())["detail"]["steps"]
    assert [s["name"] for s in steps] == ["record"]  # below its min_reward, the task of steps ends after its first

    # Claude Agent ACP (from the npm registry) on three of them: a repository fix, the task of steps, the compose task
    chosen = tmp_path / "three"
    for name in ("fix-invoice-totals", "ledger-cli-steps", "compose-inventory-report"):
        shutil.copytree(EXAMPLES / name, chosen / name)
    found = agent_run(env, fake, "claude", chosen, "examples-claude", "fake-claude", "anthropic", fake.openai_base_url)
    assert_ran_and_scored(found, sorted(p.name for p in chosen.iterdir()), jobs / "examples-claude", env["ANTHROPIC_API_KEY"])
