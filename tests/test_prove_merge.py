"""prove's four checks and their records; shards and merge."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import ROOT, pip_install_target, with_path

from nullius_core.testing import run_cli

FIXTURE = ROOT / "tests" / "fixtures" / "catalogue"


@pytest.fixture
def catalogue(tmp_path):
    target = tmp_path / "catalogue"
    shutil.copytree(FIXTURE, target)
    return target


@pytest.fixture
def env(nullius_env, catalogue, tmp_path):
    return {**nullius_env, "NULLIUS_CATALOGUE": str(catalogue), "NULLIUS_JOBS_DIR": str(tmp_path / "jobs")}


def proven(catalogue: Path) -> dict:
    return json.loads((catalogue / "benchmarks" / "faulty" / "standard.json").read_text()).get("proven", {})


def test_prove_records_the_four_checks(env, catalogue):
    result = run_cli(["prove", "faulty", "--limit", "4", "--json", "--bench-option", "mode=long"], env)
    assert result.code == 0, result.output
    checks = json.loads(result.stdout)["test"]
    assert {name: c["ok"] for name, c in checks.items()} == {"units": True, "leak": True, "nop": True, "oracle": True}
    record = proven(catalogue)["test"]
    assert record["units"]["passed"] == "12 ids, the same twice, unique"
    assert record["leak"] == {**record["leak"], "units": 4, "looked_for": 4, "short": 0, "passed": "4/4", "limit": 4}
    assert record["nop"]["passed"] == "0/4" and record["nop"]["expect"] == {"at_most": 0.0}
    assert record["oracle"]["passed"] == "4/4" and record["oracle"]["source"] == "adapter"
    assert (Path(env["NULLIUS_JOBS_DIR"]) / record["oracle"]["job"] / "result.json").exists()
    assert "failed" not in record and "not_checked" not in record
    # a run on fewer units does not replace one on more
    assert run_cli(["prove", "faulty", "--limit", "2", "--bench-option", "mode=long"], env).code == 0
    assert proven(catalogue)["test"]["oracle"]["units"] == 4


def test_a_leak_check_that_looked_for_nothing_is_not_a_pass(env, catalogue):
    """Every reference under 12 characters: "0/0" is said as not checked, never recorded or listed as passed."""
    result = run_cli(["prove", "faulty", "--limit", "3"], env)
    assert result.code == 0, result.output  # nothing failed
    line = next(x for x in result.stdout.splitlines() if " leak: " in x)
    assert line.startswith("faulty/test leak: NOT CHECKED nothing to look for: in each of the 3 units")
    record = proven(catalogue)["test"]
    assert "leak" not in record and {"oracle", "nop", "units"} <= set(record)
    assert record["not_checked"]["leak"]["looked_for"] == 0 and "under 12 characters" in record["not_checked"]["leak"]["not_checked"]
    listed = json.loads(run_cli(["list", "--json"], env, in_process=True).stdout)
    row = next(b for b in listed["benchmarks"] if b["ref"] == "faulty")
    assert row["proven"]["test"] == ["nop", "oracle", "units"] and list(row["not_checked"]["test"]) == ["leak"]
    shown = run_cli(["list"], {**env, "COLUMNS": "400"}, in_process=True).stdout  # wide enough that no cell wraps, whatever else is listed
    assert "test: not checked: leak" in shown
    # a leak check that looks for something replaces it
    assert run_cli(["prove", "faulty", "--limit", "3", "--bench-option", "mode=long"], env).code == 0
    record = proven(catalogue)["test"]
    assert record["leak"]["passed"] == "3/3" and "not_checked" not in record
    # a record an older Nullius wrote, "passed": "0/0", is listed as not checked, not as a pass
    raw = json.loads((catalogue / "benchmarks" / "faulty" / "standard.json").read_text())
    raw["proven"]["test"]["leak"] = {"units": 3, "looked_for": 0, "short": 3, "passed": "0/0"}
    (catalogue / "benchmarks" / "faulty" / "standard.json").write_text(json.dumps(raw))
    row = next(b for b in json.loads(run_cli(["list", "--json"], env, in_process=True).stdout)["benchmarks"] if b["ref"] == "faulty")
    assert "leak" not in row["proven"]["test"] and "looked for nothing (0/0)" in row["not_checked"]["test"]["leak"]


def test_a_failing_check_is_taken_back_and_kept_under_failed(env, catalogue):
    assert run_cli(["prove", "faulty", "--limit", "3"], env).code == 0
    result = run_cli(["prove", "faulty", "--limit", "6", "--bench-option", "mode=faulty"], env)
    assert result.code == 1
    assert "faulty/test oracle: FAILED" in result.stdout
    record = proven(catalogue)["test"]
    assert "oracle" not in record
    listed = json.loads(run_cli(["list", "--json"], env, in_process=True).stdout)
    row = next(b for b in listed["benchmarks"] if b["ref"] == "faulty")
    assert "failed" not in row["proven"]["test"] and "oracle" in row["failed"]["test"]
    assert record["failed"]["oracle"]["errors"] >= 1
    assert record["failed"]["nop"]["errors"] >= 1  # errored units prove nothing, for either control
    assert record["units"]["units"] == 12


def test_leak_check_finds_an_answer_in_the_prompt(env, catalogue):
    result = run_cli(["prove", "faulty", "--limit", "3", "--bench-option", "mode=leaky"], env)
    assert result.code == 1
    record = proven(catalogue)["test"]
    assert record["failed"]["leak"]["passed"] == "0/3"
    assert record["failed"]["leak"]["leaked"] == ["u0000", "u0001", "u0002"]


def test_a_plugin_benchmark_s_proofs_go_beside_it_and_go_stale_when_it_changes(nullius_env, tmp_path):
    """No copy shadows the plugin: its records go to the proofs file, keyed by its digest; an edit to its driver makes them stale."""
    dist = tmp_path / "dist"
    pip_install_target(dist, [str(ROOT / "examples" / "benchmark-plugin-template")])
    env = with_path({**nullius_env, "NULLIUS_JOBS_DIR": str(tmp_path / "jobs")}, dist)
    folder = dist / "nullius_bench_example" / "catalogue" / "benchmarks" / "example-arith"
    before = (folder / "standard.json").read_bytes()
    result = run_cli(["prove", "example-arith"], env)
    assert result.code == 0, result.output
    assert (folder / "standard.json").read_bytes() == before  # the plugin's files are never written
    user = Path(nullius_env["XDG_CONFIG_HOME"]) / "nullius" / "catalogue"
    assert not (user / "benchmarks").exists()  # and nothing is copied over them
    proofs_file = user / "proofs" / "benchmarks" / "example-arith.json"
    stored = json.loads(proofs_file.read_text())
    [record] = stored["records"]
    assert stored["kind"] == "benchmark" and stored["key"] == "example-arith" and record["version"] is None
    assert record["digest"].startswith("sha256:") and record["definition"].startswith("plugin example-bench (nullius-bench-example")
    assert record["proven"]["test"]["oracle"]["passed"] == "5/5"

    def row():
        listed = json.loads(run_cli(["list", "--json"], env).stdout)
        return next(b for b in listed["benchmarks"] if b["ref"] == "example-arith")

    now = row()
    assert now["source"].startswith("plugin example-bench") and now["proofs"]["from"] == "proofs file"
    assert now["proofs"]["file"] == str(proofs_file) and now["proofs"]["digest"] == record["digest"]
    assert now["proven"] == {"test": ["nop", "oracle", "units"]}  # its answers are short: the leak check is not a pass
    config = json.loads((Path(env["NULLIUS_JOBS_DIR"]) / record["proven"]["test"]["oracle"]["job"] / "config.json").read_text())["standard"]
    assert config["source"] == now["source"] and config["proofs"]["from"] == "definition"  # the run read the shipped proofs
    # an edit of the plugin's driver is a different definition: its old proofs are stale, shown and not used
    with (folder / "driver.py").open("a") as out:
        out.write("# an edit\n")
    stale = row()
    assert stale["proofs"]["stale"] and stale["proofs"]["from"] == "definition" and stale["proven"] == {}
    assert stale["proofs"]["stale_record"]["digest"] == record["digest"] != stale["proofs"]["digest"]
    assert "are stale" in run_cli(["list"], env).stdout
    ran = run_cli(["run", "example-arith", "oracle", "--limit", "1", "--job-name", "after-edit"], env)
    assert ran.code == 0, ran.output
    config = json.loads((Path(env["NULLIUS_JOBS_DIR"]) / "after-edit" / "config.json").read_text())["standard"]
    assert config["proofs"]["stale"] and "are stale" in config["proofs"]["says"]
    # proving the edited definition replaces the stale record
    assert run_cli(["prove", "example-arith"], env).code == 0
    [again] = json.loads(proofs_file.read_text())["records"]
    assert again["digest"] == stale["proofs"]["digest"]
    assert row()["proven"] == {"test": ["nop", "oracle", "units"]} and not row()["proofs"]["stale"]
    # a copy made on purpose (nullius new version) carries the proofs that stand for the plugin's definition now
    made = run_cli(["new", "version", "example-arith", "v2"], env)
    assert made.code == 0, made.output
    copied = json.loads((user / "benchmarks" / "example-arith" / "standard.json").read_text())
    default = copied["versions"][copied["versions"]["default"]]
    assert default["proven"]["test"]["oracle"]["passed"] == "5/5" and "proven" not in copied["versions"]["v2"]


def test_an_older_nullius_s_copy_is_still_the_user_s_definition(nullius_env, installed, tmp_path):
    """A copy made by an older Nullius is not migrated: it is used, written and listed as the user's, shadowing the plugin."""
    env = with_path({**nullius_env, "NULLIUS_JOBS_DIR": str(tmp_path / "jobs")}, installed["template"])
    shipped = installed["template"] / "nullius_bench_example" / "catalogue" / "benchmarks" / "example-arith"
    copy = Path(nullius_env["XDG_CONFIG_HOME"]) / "nullius" / "catalogue" / "benchmarks" / "example-arith"
    shutil.copytree(shipped, copy)
    assert run_cli(["prove", "example-arith", "--limit", "2"], env).code == 0
    assert json.loads((copy / "standard.json").read_text())["proven"]["test"]["oracle"]["passed"] == "2/2"
    assert not (copy.parent.parent / "proofs").exists()
    listed = json.loads(run_cli(["list", "--json"], env).stdout)
    row = next(b for b in listed["benchmarks"] if b["ref"] == "example-arith")
    assert row["source"] == "user catalogue" and row["shadows"].startswith("plugin example-bench")
    assert row["proofs"]["says"] == "the definition's own file"


def test_shards_merge_into_the_unsharded_job(env, tmp_path):
    jobs = tmp_path / "jobs"
    for i in (1, 2):
        r = run_cli(["run", "faulty", "oracle", "--shard", f"{i}/2", "--limit", "3", "--launch", "L", "--job-name", f"s{i}"], env)
        assert r.code == 0, r.output
    one = {p.name for p in (jobs / "s1").iterdir() if p.name.startswith("u")}
    two = {p.name for p in (jobs / "s2").iterdir() if p.name.startswith("u")}
    assert len(one) == len(two) == 3 and not one & two
    config = json.loads((jobs / "s1" / "config.json").read_text())["standard"]
    assert config["shard"]["of"] == 2 and config["shard"]["units_total"] == 12 and config["launch"] == "L"
    merged = run_cli(["merge", str(jobs / "s1"), str(jobs / "s2"), "-o", str(jobs / "m")], env, in_process=True)
    assert merged.code == 0, merged.output
    result = json.loads((jobs / "m" / "result.json").read_text())
    assert result["n_total_trials"] == 6 and result["standard"]["passed"] == 6 and result["standard"]["mean"] == 1.0
    merged_config = json.loads((jobs / "m" / "config.json").read_text())["standard"]
    assert [m["job"] for m in merged_config["merged_from"]] == ["s1", "s2"]
    unit = sorted(one)[0]
    assert (jobs / "m" / unit / "result.json").stat().st_ino == (jobs / "s1" / unit / "result.json").stat().st_ino
    # the same units unsharded: equal in units and mean
    whole = run_cli(["run", "faulty", "oracle", "--job-name", "whole"], env)
    assert whole.code == 0
    whole_units = {p.name for p in (jobs / "whole").iterdir() if p.name.startswith("u")}
    assert one | two <= whole_units


def test_merge_refusals(env, tmp_path):
    jobs = tmp_path / "jobs"
    run_cli(["run", "faulty", "oracle", "--shard", "1/2", "--limit", "2", "--launch", "L", "--job-name", "a"], env)
    run_cli(["run", "faulty", "oracle", "--shard", "2/3", "--limit", "2", "--launch", "L", "--job-name", "b"], env)
    run_cli(["run", "faulty", "oracle", "--shard", "1/2", "--limit", "2", "--launch", "L", "--job-name", "a2"], env)
    run_cli(["run", "faulty", "oracle", "--shard", "2/2", "--limit", "2", "--launch", "L", "--bench-option", "mode=workspace", "--job-name", "c"], env)
    differs = run_cli(["merge", str(jobs / "a"), str(jobs / "b"), "-o", str(jobs / "ab")], env, in_process=True)
    assert differs.code == 2 and "another N (3, not 2)" in differs.stderr
    forced = run_cli(["merge", str(jobs / "a"), str(jobs / "b"), "-o", str(jobs / "ab"), "--force"], env, in_process=True)
    assert forced.code == 0
    assert json.loads((jobs / "ab" / "config.json").read_text())["standard"]["merged_despite"]
    again = run_cli(["merge", str(jobs / "ab"), str(jobs / "c"), "-o", str(jobs / "abc")], env, in_process=True)
    assert again.code == 2 and "merged despite differences" in again.stderr
    twice = run_cli(["merge", str(jobs / "a"), str(jobs / "a2"), "-o", str(jobs / "aa"), "--force"], env, in_process=True)
    assert twice.code == 2 and "two trials of one unit" in twice.stderr
    options = run_cli(["merge", str(jobs / "a"), str(jobs / "c"), "-o", str(jobs / "ac")], env, in_process=True)
    assert options.code == 0, options.output
    sources = json.loads((jobs / "ac" / "config.json").read_text())["standard"]["merged_from"]
    assert [s["options"]["mode"] for s in sources] == ["clean", "workspace"]
    moved = jobs / "a" / sorted(p.name for p in (jobs / "a").iterdir() if p.name.startswith("u"))[0]
    record = json.loads((moved / "result.json").read_text())
    record["standard"]["job"] = "someone-else"
    (moved / "result.json").write_text(json.dumps(record))
    foreign = run_cli(["merge", str(jobs / "a"), str(jobs / "c"), "-o", str(jobs / "ac2")], env, in_process=True)
    assert foreign.code == 2 and "its record names job 'someone-else'" in foreign.stderr
    record["standard"]["job"] = "a"
    record["standard"]["control"] = "nop"
    (moved / "result.json").write_text(json.dumps(record))
    other_control = run_cli(["merge", str(jobs / "a"), str(jobs / "c"), "-o", str(jobs / "ac3")], env, in_process=True)
    assert other_control.code == 2 and "its record names control 'nop', not 'oracle'" in other_control.stderr


def test_a_merge_lists_the_shards_a_launch_lacks(env, tmp_path):
    jobs = tmp_path / "jobs"
    for i in (1, 3):
        ran = run_cli(["run", "faulty", "oracle", "--shard", f"{i}/3", "--limit", "1", "--launch", "L3", "--job-name", f"t{i}"], env)
        assert ran.code == 0, ran.output
    merged = run_cli(["merge", str(jobs / "t1"), str(jobs / "t3"), "-o", str(jobs / "m")], env, in_process=True)
    assert merged.code == 0, merged.output
    assert "absent shards of the launch: 2: the merged job is incomplete" in merged.stderr
    summary = json.loads((jobs / "m" / "result.json").read_text())["standard"]
    assert summary["absent_shards"] == [2] and summary["state"] == "incomplete"


def test_prove_holds_a_merged_control_job_to_its_bound(env, tmp_path, catalogue):
    jobs = tmp_path / "jobs"
    for i in (1, 2):
        run_cli(["run", "faulty", "nop", "--shard", f"{i}/2", "--launch", "N", "--job-name", f"n{i}"], env)
    assert run_cli(["merge", str(jobs / "n1"), str(jobs / "n2"), "-o", str(jobs / "nm")], env, in_process=True).code == 0
    result = run_cli(["prove", "faulty", "--job", f"nop={jobs / 'nm'}", "--limit", "2"], env)
    assert result.code == 0, result.output
    record = proven(catalogue)["test"]["nop"]
    assert record["job"] == "nm" and record["units"] == 12 and record["passed"] == "0/12"


def test_prove_refuses_a_job_that_is_not_one_before_it_runs_anything(env, catalogue, tmp_path):
    before = proven(catalogue)
    empty = tmp_path / "empty"
    empty.mkdir()
    garbled = tmp_path / "garbled"
    garbled.mkdir()
    (garbled / "config.json").write_text('{"standard": ')
    cases = [
        (empty, f"{empty} is not a job (no config.json)"),
        (tmp_path / "absent", f"{tmp_path / 'absent'} is not a job (no such folder)"),
        (garbled, f"{garbled} is not a job (its config.json is not a job's: Expecting value: line 1 column 14 (char 13))"),
    ]
    for folder, why in cases:
        result = run_cli(["prove", "faulty", "--limit", "2", "--job", f"nop={folder}"], env)
        assert result.code == 2, result.output
        assert "Traceback" not in result.output
        assert result.stderr.splitlines() == [f"nullius: --job nop={folder}: {why}"]
    assert proven(catalogue) == before
    assert not Path(env["NULLIUS_JOBS_DIR"]).exists()


def test_a_job_whose_record_has_no_reward_fails_its_check_and_proves_nothing(env, catalogue):
    ran = run_cli(["run", "faulty", "nop", "--limit", "2", "--job-name", "n"], env)
    assert ran.code == 0, ran.output
    job = Path(env["NULLIUS_JOBS_DIR"]) / "n"
    trial = job / "u0000" / "result.json"
    result = json.loads(trial.read_text())
    result["verifier_result"] = {}  # a trial record without its reward
    trial.write_text(json.dumps(result))
    failed = run_cli(["prove", "faulty", "--limit", "2", "--job", f"nop={job}", "--json"], env)
    assert failed.code == 1, failed.output
    assert "Traceback" not in failed.stderr
    nop = json.loads(failed.stdout)["test"]["nop"]
    assert nop["ok"] is False and "u0000's record has no reward and no error" in nop["problems"]


def test_prove_that_breaks_exits_3_never_1(env, catalogue, monkeypatch):
    """A bug of Nullius's own under prove: the traceback and exit 3, never the 1 of a failed check."""
    from click.testing import CliRunner

    from nullius_core.cli.main import cli
    from nullius_core.run import prove

    def broken(*args, **kwargs):
        raise RuntimeError("a bug of ours")

    monkeypatch.setattr(prove, "prove", broken)
    broke = CliRunner().invoke(cli, ["prove", "faulty", "--limit", "2"], env=env)
    assert broke.exit_code == 3, broke.output
    assert "RuntimeError: a bug of ours" in broke.stderr
    assert broke.stderr.splitlines()[-1] == "nullius: prove broke (the traceback above is Nullius's own error); exit 3, not 1: no check failed"
    assert "failed" not in proven(catalogue).get("test", {})


def test_use_bundled_sets_the_users_copy_and_its_local_proofs_aside(nullius_env, tmp_path):
    """The app's "Use bundled entry": the plugin's own definition again; nothing of the user's is deleted."""
    dist = tmp_path / "dist"
    pip_install_target(dist, [str(ROOT / "examples" / "benchmark-plugin-template")])
    env = with_path({**nullius_env, "NULLIUS_JOBS_DIR": str(tmp_path / "jobs")}, dist)
    assert run_cli(["prove", "example-arith", "--limit", "2"], env).code == 0  # local proofs of the plugin's entry
    user = Path(nullius_env["XDG_CONFIG_HOME"]) / "nullius" / "catalogue"
    assert (user / "proofs" / "benchmarks" / "example-arith.json").exists()
    shutil.copytree(dist / "nullius_bench_example" / "catalogue" / "benchmarks" / "example-arith", user / "benchmarks" / "example-arith")
    listed = json.loads(run_cli(["list", "--json"], env).stdout)
    assert next(b for b in listed["benchmarks"] if b["ref"].startswith("example-arith"))["source"] == "user catalogue"
    used = run_cli(["use-bundled", "example-arith"], env)
    assert used.code == 0, used.output
    assert "benchmark example-arith: the bundled entry again; the user's copy is set aside in" in used.stdout
    listed = json.loads(run_cli(["list", "--json"], env).stdout)
    row = next(b for b in listed["benchmarks"] if b["ref"].startswith("example-arith"))
    assert row["source"].startswith("plugin example-bench") and not row["from_user"] and row["proofs"]["from"] == "definition"
    assert not (user / "benchmarks" / "example-arith").exists() and not (user / "proofs" / "benchmarks" / "example-arith.json").exists()
    [aside] = (user / ".set-aside").iterdir()
    assert (aside / "benchmarks" / "example-arith" / "standard.json").exists()  # nothing deleted: it can be brought back
    assert (aside / "proofs" / "benchmarks" / "example-arith.json").exists()
    again = run_cli(["use-bundled", "example-arith"], env)
    assert again.code == 2 and "is not a user copy: it is already the bundled entry" in again.stderr
    missing = run_cli(["use-bundled", "no-such-thing"], env)
    assert missing.code == 2 and "no agent, capability or benchmark named 'no-such-thing'" in missing.stderr


def test_use_bundled_keeps_a_user_entry_no_plugin_ships(env, catalogue):
    refused = run_cli(["use-bundled", "faulty"], env, in_process=True)
    assert refused.code == 2 and "no plugin ships benchmark 'faulty': its user copy is the only definition, and is kept" in refused.stderr
    assert (catalogue / "benchmarks" / "faulty" / "standard.json").exists()
