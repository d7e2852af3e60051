"""A unit's cost does not grow with the units before it: a control's trial is small, result.json comes from running
figures that say what the figures over every trial say, and what the run keeps in memory does not grow per trial."""

from __future__ import annotations

import copy
import json
import os
import random
import tracemalloc
from pathlib import Path

from conftest import ROOT

from nullius_core.fsutil import read_json_lines
from nullius_core.jobs import attempts, costs, stats
from nullius_core.jobs.job_result import job_result
from nullius_core.jobs.layout import JobDir
from nullius_core.jobs.names import Names
from nullius_core.jobs.report import pick_trial, report
from nullius_core.jobs.standard import standard_of
from nullius_core.jobs.tally import Tally
from nullius_core.run.plan import PlannedTrials
from nullius_core.run.shard import Shard, plan
from nullius_core.testing import run_cli

CATALOGUE = ROOT / "tests" / "fixtures" / "catalogue"


def _folder(trial: Path) -> tuple[int, int, int, list[str]]:
    """Inodes (the folder's own included), bytes written, blocks allocated, and the empty folders."""
    inodes, written, blocks, empty = 1, 0, os.lstat(trial).st_blocks, []
    for folder, dirs, files in os.walk(trial):
        if not dirs and not files:
            empty.append(folder)
        for name in dirs + files:
            st = os.lstat(os.path.join(folder, name))
            inodes += 1
            blocks += st.st_blocks
            written += st.st_size if name in files else 0
    return inodes, written, blocks * 512, empty


def test_a_gsm8k_oracle_trial_is_small_and_whole(env_shared_installs, tmp_path):
    env = {**env_shared_installs, "NULLIUS_JOBS_DIR": str(tmp_path)}
    result = run_cli(["run", "gsm8k", "oracle", "--limit", "20", "-j", "2", "--job-name", "g"], env)
    assert result.code == 0, result.output
    job = tmp_path / "g"
    for trial in sorted(p for p in job.iterdir() if p.is_dir() and not p.name.startswith(".")):
        inodes, written, allocated, empty = _folder(trial)
        assert not empty, empty
        assert not (trial / ".work").exists()  # GSM8K's driver writes nothing into a workspace: a control keeps none
        assert inodes <= 10 and written <= 30_000, (trial.name, inodes, written)
        assert allocated <= 10 * 4096, (trial.name, allocated)
        assert sorted(str(p.relative_to(trial)) for p in trial.rglob("*")) == [
            "agent", "agent/trajectory.json", "config.json", "result.json",
            "verifier", "verifier/reward.txt", "verifier/score.json", "verifier/test-stdout.txt"]
    summary = json.loads((job / "result.json").read_text())["standard"]
    assert summary["passed"] == 20 and summary["state"] == "finished"


def test_a_control_run_loads_no_relay(env_shared_installs, tmp_path):
    """A control's units call no model: the run imports neither the relay's server nor aiohttp (14 MB a process)."""
    env = {**env_shared_installs, "NULLIUS_JOBS_DIR": str(tmp_path), "PYTHONPROFILEIMPORTTIME": "1"}
    result = run_cli(["run", "gsm8k", "oracle", "--limit", "2", "--job-name", "g"], env)
    assert result.code == 0, result.output[-3000:]
    imported = {line.rsplit("|", 1)[1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}
    assert "nullius_core.run.engine" in imported  # the run's own imports are what this sees
    assert not imported & {"aiohttp", "nullius_core.relay.server", "urllib.request"}, imported & {"aiohttp", "nullius_core.relay.server"}


def _recomputed(job: Path) -> dict:
    """The job's result.json computed again from its trials' own files, in the order the run finished them."""
    order = [e["trial_name"] for e in read_json_lines(job / "events.jsonl") if e["type"] == "trial_finished" and not e.get("again")]
    trials = [json.loads((job / name / "result.json").read_text()) for name in order]
    std = standard_of(JobDir(job))
    return job_result(std, trials, len(std.planned_trials), final=True, state="finished")


def _without_times(result: dict) -> dict:
    return {k: v for k, v in result.items() if k not in ("updated_at", "finished_at")}


def test_result_json_after_a_run_is_the_one_recomputed_from_its_trials(nullius_env, tmp_path):
    env = {**nullius_env, "NULLIUS_CATALOGUE": str(CATALOGUE), "NULLIUS_JOBS_DIR": str(tmp_path), "FAKE_PROVIDER_API_KEY": "sk-never-seen"}
    for name, args in {"faults": ["--bench-option", "mode=faulty", "-j", "3"], "repeat": ["--repeat", "3", "--limit", "4", "-j", "2"]}.items():
        result = run_cli(["run", "faulty", "oracle", *args, "--job-name", name], env)
        assert result.code == 0, result.output
        written = json.loads((tmp_path / name / "result.json").read_text())
        assert _without_times(written) == _without_times(_recomputed(tmp_path / name))
    faults = json.loads((tmp_path / "faults" / "result.json").read_text())
    assert faults["stats"]["n_errored_trials"] > 0 and faults["standard"]["errors"]  # the faults were there to count
    assert json.loads((tmp_path / "repeat" / "result.json").read_text())["standard"]["attempts"]["k"] == 3


def _trial(i: int, rng: random.Random) -> dict:
    """A trial's result.json as the figures read it: rewards of several kinds, parts, errors, costs."""
    unit = f"u{i % 40:04d}"
    trial: dict = {"trial_name": f"{unit}r{i // 40 + 1}", "task_name": unit, "source": "test",
                   "agent_info": {"name": "ref", "model_info": {"name": "m"}}, "exception_info": None,
                   "standard": {"unit": unit, "outcome": "scored"}}
    if i % 50:  # seconds that tie (slowest: the first of equals by name), and a trial without its times
        trial.update(started_at="2026-12-04T01:00:00Z", finished_at=f"2026-12-04T01:00:{rng.choice([5, 9, 9, 12, 30]):02d}.5Z")
    roll = rng.random()
    if roll < 0.1:
        trial["exception_info"] = {"exception_type": rng.choice(["VerifierError", "CancelledError", "RateLimitedError"])}
    else:
        reward = rng.choice([0.0, 1.0, 0.25, 1 / 3, 0.7])
        trial["verifier_result"] = {"rewards": {"reward": reward}}
        trial["standard"]["passed"] = reward == 1.0
        trial["standard"]["parts"] = {"n": 2, "by": "kind", "parts": [{"kind": "a", "reward": reward}, {"kind": "b", "reward": 1.0}]}
    if rng.random() < 0.8:
        cost = {"as_served_usd": rng.random() / 1000, "first_run_usd": rng.random() / 1000, "priced_as": {"m": "2026-01-01"},
                "agent_reported_usd": rng.random()}
        trial["agent_result"] = {"n_input_tokens": rng.randint(1, 999), "n_output_tokens": 7, "cost_usd": cost["as_served_usd"],
                                 "metadata": {"cost": cost}}
    return trial


def test_the_running_figures_say_what_the_figures_over_every_trial_say():
    rng = random.Random(20)
    trials = [_trial(i, rng) for i in range(400)]
    for kind in ("pass", "score"):
        tally = Tally(kind)
        for trial in trials:
            tally.add(trial)
        assert tally.stats(450, 3) == stats.job_stats(trials, 450, 3, kind)
        assert tally.cost() == costs.job_cost(trials)
        assert tally.attempts() == attempts.combined(trials, kind)
        figures, listed = tally.summary(450), stats.summary(trials, 450, kind)
        assert figures.pop("mean_ci95") == listed.pop("mean_ci95")  # the spread summed exactly, the interval to 4 places
        assert figures == listed
        slowest = min((t for t in trials if t.get("finished_at", "").endswith(":30.5Z")), key=lambda t: t["trial_name"])
        assert figures["slowest"] == {"trial": slowest["trial_name"], "seconds": 30.5}
        shuffled = trials[:]
        random.Random(3).shuffle(shuffled)
        assert stats.summary(shuffled, 450, kind)["slowest"] == figures["slowest"]  # whatever order the trials came in


def test_what_the_run_keeps_per_trial_does_not_grow_with_the_trials(tmp_path):
    """The tally a run keeps: one trial's figures held is a name in Harbor's lists, never its record."""
    record = _trial(1, random.Random(1))
    names = [f"u{i:05d}" for i in range(8000)]  # the run's own names, held by its plan whatever the tally does

    def held(n: int) -> int:
        tally = Tally("pass", per_unit=False)
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        for name in names[:n]:
            trial = copy.deepcopy(record)
            trial["trial_name"] = name
            tally.add(trial)
            del trial
        grown = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        assert tally.completed == n
        return grown

    small, big = held(2000), held(8000)
    assert (big - small) / 6000 < 24, (small, big)  # its name's text and its end in Harbor's lists (Names), not a record of a few KB


def test_an_ended_job_says_its_count_and_slowest_trial_and_a_running_one_is_read_trial_by_trial(nullius_env, tmp_path):
    env = {**nullius_env, "NULLIUS_CATALOGUE": str(CATALOGUE), "NULLIUS_JOBS_DIR": str(tmp_path)}
    assert run_cli(["run", "faulty", "oracle", "--job-name", "o"], env).code == 0
    job = tmp_path / "o"
    read = report(job)
    assert read.outcomes["not run"] == 0 and read.slowest is not None and read.outcomes["passed"] == 12
    written = json.loads((job / "result.json").read_text())
    assert written["standard"]["slowest"] == {"trial": read.slowest.trial, "seconds": written["standard"]["slowest"]["seconds"]}

    def read_again(standard: dict) -> object:
        (job / "result.json").write_text(json.dumps({**written, "standard": standard}))
        return report(job)

    without = {k: v for k, v in written["standard"].items() if k != "slowest"}  # a job from before slowest was kept
    assert read_again(without) == read
    (job / "u0003" / "result.json").rename(job / "u0003" / "gone.json")
    assert read_again(written["standard"]).outcomes["not run"] == 0  # an ended job's own count: no trial read again
    assert read_again({**written["standard"], "state": "running"}).outcomes["not run"] == 1  # a running one's, read one at a time


def test_view_picks_its_trial_reading_one_record_at_a_time_and_none_when_every_trial_passed(nullius_env, tmp_path):
    env = {**nullius_env, "NULLIUS_CATALOGUE": str(CATALOGUE), "NULLIUS_JOBS_DIR": str(tmp_path)}
    assert run_cli(["run", "faulty", "oracle", "--job-name", "o"], env).code == 0
    job = tmp_path / "o"
    written = json.loads((job / "result.json").read_text())
    assert written["standard"]["passed"] == written["standard"]["trials"] == 12
    assert pick_trial(job, None) == job / "u0000"
    assert pick_trial(job, "u0007") == job / "u0007" and pick_trial(job, "u0099") is None and pick_trial(job, "../o") is None
    for name, record in (("u0005", {"standard": {"outcome": "failed"}}), ("u0009", {"exception_info": {"exception_type": "VerifierError"}})):
        trial = json.loads((job / name / "result.json").read_text())
        trial.update(record) if "exception_info" in record else trial["standard"].update(record["standard"])
        (job / name / "result.json").write_text(json.dumps(trial))
    assert pick_trial(job, None) == job / "u0000"  # the ended job says every trial passed: no record is read
    (job / "result.json").write_text(json.dumps({**written, "standard": {**written["standard"], "state": "running"}}))
    assert pick_trial(job, None) == job / "u0009"  # read one at a time: the first errored, before the first failed
    (job / "u0009" / "result.json").unlink()
    assert pick_trial(job, None) == job / "u0005"


def test_names_are_a_list_of_str_held_in_a_few_bytes_each():
    names = Names(["u0", "é-1", ""])
    names.append("last")
    assert names == ["u0", "é-1", "", "last"] and list(names) == ["u0", "é-1", "", "last"] and len(names) == 4
    assert names[1] == "é-1" and names[-1] == "last" and names[1:3] == ["é-1", ""] and copy.deepcopy(names) == names
    assert names != ["u0"] and Names(["a"]) == Names(["a"])
    try:
        names[4]
    except IndexError:
        pass
    else:
        raise AssertionError("past the end must raise IndexError")
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    many = Names(f"u{i:06d}" for i in range(100_000))
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert len(many) == 100_000 and many[99_999] == "u099999"
    assert grown / 100_000 < 7 + 8 + 4, grown  # its text and its end (and the buffers' slack), not a str object of ~56 bytes


def test_a_plan_of_100000_units_holds_a_few_bytes_a_unit_and_makes_each_trial_when_taken():
    units = Names(f"u{i:06d}" for i in range(100_000))
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    trials = PlannedTrials(plan(units, Shard(1, 2), None), repeat=2)
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert grown / len(trials.chosen) < 32, grown  # the unit's text, its end and its position; no Work a trial
    taken = iter(trials)
    first, second = next(taken), next(taken)
    unit = trials.chosen.units[0]
    assert (first.unit, first.attempt, first.trial_name) == (unit, 1, f"{unit}r1") and (second.attempt, second.trial_name) == (2, f"{unit}r2")
    assert len(trials) == 2 * len(trials.chosen) and all(Shard(1, 2).holds(u) for u in trials.units())
    assert [p.unit for p in plan(units, None, 3)] == ["u000000", "u000001", "u000002"]
    assert [p.position for p in plan(units, Shard(2, 2), 2)] == [i for i, u in enumerate(units) if Shard(2, 2).holds(u)][:2]


def test_a_control_run_uses_its_empty_workspaces_again_and_a_written_one_is_the_trials(nullius_env, tmp_path):
    """An empty spare workspace goes to the next unit; one the driver wrote into ends in its trial as a repository."""
    env = {**nullius_env, "NULLIUS_CATALOGUE": str(CATALOGUE), "NULLIUS_JOBS_DIR": str(tmp_path)}
    for name, args in {"plain": [], "written": ["--bench-option", "mode=workspace"]}.items():
        result = run_cli(["run", "faulty", "oracle", "-j", "2", "--job-name", name, *args], env)
        assert result.code == 0, result.output
        assert not (tmp_path / name / ".work" / "spare").exists()  # the spares end with the run
    plain = sorted(p for p in (tmp_path / "plain").iterdir() if p.is_dir() and not p.name.startswith("."))
    assert len(plain) == 12 and not any((t / ".work").exists() for t in plain)
    written = sorted(p for p in (tmp_path / "written").iterdir() if p.is_dir() and not p.name.startswith("."))
    for trial in written:
        workspace = trial / ".work" / "workspace"
        assert (workspace / "README.md").is_file() and (workspace / ".git").is_dir(), trial.name
        assert json.loads((trial / "result.json").read_text())["standard"]["passed"] is True, trial.name
    assert len(written) == 12
