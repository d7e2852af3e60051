"""End to end: Claude Agent ACP (from npm) judges a Harbor job, three repetitions, through its relay, against the scripted judge.

What it proves: a real npm ACP agent, started by Nullius as the internal
benchmark's agent, reads the judge's prompt and answers through Anthropic
Messages; the rubric and criteria are found beside the Harbor tasks
(examples/harbor-tasks: assessment_dimensions.json in the dataset folder,
assessment_criteria.md in each task); one garbage reply in three is ungraded;
the judge's calls are its own record, the key in no file, and nothing Claude
started outlives `nullius assess`. The judge is shown the patch the docker
backend made in each task's box (its repository against its first commit)
before the container went. The job is the oracle's on two of the
examples, on docker (the images are built once per machine).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import KEY, evals, summary

from nullius_core.testing import files_holding, processes_under, run_cli
from nullius_core.testing.fake_model import running_fake_model
from nullius_judge.rubric import load

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples" / "harbor-tasks"
sys.path.insert(0, str(REPO / "tests"))
from harbor.venv import ensure_harbor_python  # noqa: E402  (the repository's tests' Harbor 0.25 venv, built once per machine)
TASKS = ("fix-lru-cache", "fix-semver-order")


def _docker_or_fail() -> None:
    done = subprocess.run(["docker", "version", "--format", "{{.Server.Version}}"], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        pytest.fail(f"this test needs docker for the Harbor job (./dev test starts dockerd): {done.stderr.strip()[-300:]}")
    if shutil.which("npm") is None:
        pytest.fail("npm must be on PATH: Claude Agent ACP is installed from the npm registry")


def test_claude_agent_acp_judges_a_harbor_job_three_times_per_trial(home):
    _docker_or_fail()
    env, root = home
    env = {k: v for k, v in env.items() if k not in ("ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL")}
    tasks = root / "harbor-tasks"
    tasks.mkdir()
    shutil.copy(EXAMPLES / "assessment_dimensions.json", tasks)
    for name in TASKS:
        shutil.copytree(EXAMPLES / name, tasks / name)
    made = run_cli(["run", "harbor", "oracle", "--dataset", str(tasks), "--backend", "docker", "-j", "2", "--job-name", "harbor-oracle"], env, timeout=1800)
    assert made.code == 0, made.output
    job = Path(env["NULLIUS_JOBS_DIR"]) / "harbor-oracle"
    for name in TASKS:  # the box's repository, as the oracle left it: a real patch made in the box, kept past the container
        made_patch = (job / name / "agent" / "changes.patch").read_text()
        assert made_patch.startswith("diff --git a/"), made_patch[:300]
        assert json.loads((job / name / "result.json").read_text())["verifier_result"]["rewards"]["reward"] == 1.0
    assert "+            self._data.move_to_end(key)" in (job / "fix-lru-cache" / "agent" / "changes.patch").read_text()
    with running_fake_model("nullius_judge.player:respond_garbage_second") as fake:
        result = run_cli(["assess", str(job), "--judge", "claude", "--model", "fake-claude-judge", "--provider", "anthropic",
                          "--base-url", fake.openai_base_url, "--unsandboxed", "--eval-repetitions", "3", "--max-concurrent-eval", "2"],
                         env, timeout=1800)
        if "cannot be installed" in result.output:
            pytest.fail("Claude Agent ACP could not be installed from the npm registry:\n" + result.output[-3000:])
        assert result.code == 0, result.output
        prompts = [json.dumps(r.body) for r in fake.requests if r.api == "messages"]
    fingerprint = load(EXAMPLES / "assessment_dimensions.json").fingerprint()
    for name in TASKS:
        found = evals(job / name)
        assert sorted(found) == [1, 2, 3]
        assert {e["judge"]["agent"] for e in found.values()} == {"claude"} and found[1]["judge"]["model"] == "fake-claude-judge"
        assert found[1]["judge"]["version"]
        assert {e["rubric_fingerprint"] for e in found.values()} == {fingerprint}
        assert found[2]["graded"] is False and found[1]["graded"] and found[3]["graded"]
        assert [d["name"] for d in found[1]["dimensions"]] == ["correctness", "scope", "code_quality", "robustness"]
        assert found[1]["usage"]["n_input_tokens"] > 0
        assert (job / name / "assessment" / "eval_1" / "calls.jsonl").read_text().strip()
        assert summary(job / name)["clusters"][0]["normalized_score"]["n"] == 2
    assert any("half-up" in p or "move_to_end" in p for p in prompts)  # fix-lru-cache's own criteria reached the judge
    assert any("SemVer 2.0.0 section 11" in p for p in prompts)
    assert any("+            self._data.move_to_end(key)" in p for p in prompts)  # the judge was shown the patch itself
    assert files_holding(job, KEY.encode()) == []
    harbor = subprocess.run([str(ensure_harbor_python()), str(REPO / "tests" / "harbor" / "validate_job.py"), str(job)],
                            capture_output=True, text=True, timeout=300)
    report = json.loads(harbor.stdout)  # Harbor's own models still read the assessed job: its trials, and only those
    assert report["ok"] and report["checked"]["trials"] == len(TASKS), report["errors"][:3]
    # the judge's agents ran from the shared install, which other workers' tests run too: this test's are those
    # whose environment names its own root
    assert processes_under(job) == [] and processes_under(root) == []
