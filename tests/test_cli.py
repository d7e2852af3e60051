"""The `nullius` command as a user runs it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import ROOT, with_path

from nullius_core.testing import run_cli

EXAMPLE_CATALOGUE = ROOT / "examples" / "catalogue"


def test_version(nullius_env):
    result = run_cli(["--version"], nullius_env, in_process=True)
    assert result.code == 0 and result.stdout.startswith("nullius 0.1.0 (Python 3.")


def test_standard_spelling_is_the_same_command(env_good):
    plain = run_cli(["list", "--json"], env_good)
    spelt = run_cli(["standard", "list", "--json"], env_good)
    assert plain.code == spelt.code == 0
    assert json.loads(plain.stdout) == json.loads(spelt.stdout)
    assert "fit" in run_cli(["standard", "--help"], env_good).stdout


def test_paths_follow_the_variables(nullius_env, tmp_path):
    env = {**nullius_env, "STANDARD_DIR": str(tmp_path / "std"), "SECRETS_DIR": str(tmp_path / "sec"), "NULLIUS_CATALOGUE": str(tmp_path / "cat")}
    described = json.loads(run_cli(["paths", "--json"], env, in_process=True).stdout)
    assert all(d["moved_by"] for d in described.values()) and described["jobs"]["moved_by"].startswith("NULLIUS_JOBS_DIR")
    paths = {name: d["path"] for name, d in described.items()}
    assert paths["STANDARD_DIR"] == str(tmp_path / "std")
    assert paths["STANDARD_DATA_DIR"] == str(tmp_path / "std" / "datasets")
    assert paths["SECRETS_DIR"] == str(tmp_path / "sec")
    assert paths["user catalogue"] == str(tmp_path / "cat")
    assert set(paths) >= {"user catalogue", "STANDARD_DIR", "STANDARD_DATA_DIR", "SECRETS_DIR", "jobs"}


def test_installing_the_template_adds_its_benchmark(nullius_env, installed):
    before = json.loads(run_cli(["list", "--json"], nullius_env).stdout)
    assert all(b["ref"] != "example-arith" for b in before["benchmarks"])
    env = with_path({**nullius_env, "NULLIUS_CATALOGUE": str(EXAMPLE_CATALOGUE)}, installed["template"])
    after = run_cli(["list", "--json"], env)
    assert after.code == 0, after.output
    listed = json.loads(after.stdout)
    row = next(b for b in listed["benchmarks"] if b["ref"] == "example-arith")
    assert row["source"] == "plugin example-bench (nullius-bench-example 0.1.0)"
    assert row["needs"] == ["agent.task/v1"] and row["datasets"] == {"test": 5}
    assert "qwen-code@0.24.4" in [a["ref"] for a in listed["agents"]]
    assert "keyword-memory" in [c["ref"] for c in listed["capabilities"]]
    checked = run_cli(["check"], env)
    assert checked.code == 0 and checked.stdout.startswith("ok: ")
    fit = run_cli(["fit", "example-arith"], env)
    assert fit.code == 0
    assert "qwen-code@0.24.4: missing port agent.task/v1" in fit.stdout
    table = run_cli(["list"], env).stdout
    assert "example-arith" in table and "qwen-code@0.24.4" in table


def test_fit_json_and_an_unknown_benchmark(env_good):
    data = json.loads(run_cli(["fit", "fixture-tools", "--json"], env_good).stdout)
    assert {"fixture-old", "fixture-proven", "fixture-versions@2.0.0"} <= set(data["fits"])
    assert not {"fixture-noskill", "fixture-notools", "fixture-failed"} & set(data["fits"])
    refused = {r["participant"]: r["reasons"] for r in data["refused"]}
    assert refused["fixture-noskill"] == ["skill decoys of agent.tools/v1 not shown"]
    assert refused["fixture-notools"] == ["missing port agent.tools/v1"]
    assert "fixture-mem" not in refused  # a capability is not asked to run an agent benchmark
    unknown = run_cli(["fit", "nope"], env_good)
    assert unknown.code == 2 and "no benchmark named 'nope'" in unknown.stderr
    missing_version = run_cli(["fit", "fixture-tools@9"], env_good)
    assert missing_version.code == 2 and "has no version '9'" in missing_version.stderr
    listed = json.loads(run_cli(["list", "--json"], env_good).stdout)
    assert {"benchmark": "fixture-tools", "participant": "fixture-proven"} in listed["fits"]
    offers = next(a for a in listed["agents"] if a["ref"] == "fixture-proven")["offers"]
    assert offers["agent.tools/v1"]["skills"] == ["decoys"] and offers["agent.tools/v1"]["kit_version"] == 2


def test_list_json_names_each_port_and_whether_conform_can_run_its_kit(nullius_env):
    """The app's Prove its ports offers the ports whose kit runs: list --json's `ports`."""
    listed = json.loads(run_cli(["list", "--json"], nullius_env, in_process=True).stdout)
    ports = {p["name"]: p for p in listed["ports"]}
    assert ports["agent.task/v1"] == {"name": "agent.task/v1", "family": "agent", "kit_version": 1, "basic": ["word-1", "word-2", "word-3"],
                                      "skills": {}, "conform": None}
    assert ports["agent.tools/v1"]["kit_version"] == 2 and set(ports["agent.tools/v1"]["skills"]) == {"decoys", "chain", "retry"}
    assert ports["cap.memory/v1"]["family"] == "capability" and ports["cap.memory/v1"]["conform"] is None
    assert ports["agent.browser/v1"]["conform"] == "the port has no kit yet" and ports["agent.browser/v1"]["kit_version"] is None


def test_new_writes_into_the_user_catalogue_and_check_names_what_to_fill(nullius_env):
    result = run_cli(["new", "benchmark", "my-bench"], nullius_env, in_process=True)
    assert result.code == 0, result.output
    folder = Path(nullius_env["XDG_CONFIG_HOME"]) / "nullius" / "catalogue" / "benchmarks" / "my-bench"
    assert sorted(p.name for p in folder.iterdir()) == ["benchmark.json", "driver.py", "standard.json", "upstream-settings.json"]
    check = run_cli(["check"], nullius_env, in_process=True)
    assert check.code == 2
    assert f"{folder / 'standard.json'}: $.upstream.tested: expected a full commit" in check.stderr
    again = run_cli(["new", "benchmark", "my-bench"], nullius_env, in_process=True)
    assert again.code == 2 and "exists already" in again.stderr
    bad = run_cli(["new", "agent", "Bad Key"], nullius_env, in_process=True)
    assert bad.code == 2 and "a key is lowercase" in bad.stderr
    cap = run_cli(["new", "feature", "old-style"], nullius_env, in_process=True)
    assert cap.code == 0
    written = json.loads((folder.parent.parent / "capabilities" / "old-style" / "capability.json").read_text())
    assert written["schema"] == "nullius.capability/v1" and written["kind"] == "memory"
    mem = run_cli(["new", "benchmark", "mem-bench", "--family", "feature", "--port", "feature.memory/v1"], nullius_env, in_process=True)
    assert mem.code == 0
    standard = json.loads((folder.parent / "mem-bench" / "standard.json").read_text())
    assert standard["family"] == "capability" and standard["needs"] == ["cap.memory/v1"]


def test_new_version_copies_a_plugin_entry_first_and_keeps_its_proofs(env_good, installed, nullius_env):
    shipped = installed["good"] / "nullius_fixture_plugin" / "catalogue" / "agents" / "fixture-proven" / "agent.json"
    before = shipped.read_bytes()
    result = run_cli(["new", "version", "fixture-proven", "1.1.0"], env_good)
    assert result.code == 0, result.output
    assert shipped.read_bytes() == before
    user = Path(nullius_env["XDG_CONFIG_HOME"]) / "nullius" / "catalogue" / "agents" / "fixture-proven" / "agent.json"
    data = json.loads(user.read_text())
    assert data["versions"]["default"] == "1.0.0"
    assert set(data["versions"]["1.0.0"]["proven"]) == {"agent.task/v1", "agent.tools/v1"}
    assert "proven" not in data["versions"]["1.1.0"]
    assert data["versions"]["1.1.0"]["upstream"] == {"npm": "fixture-agent", "version": "1.1.0"}
    fit = json.loads(run_cli(["fit", "fixture-tools", "--json"], env_good).stdout)
    assert "fixture-proven@1.0.0" in fit["fits"]
    refused = {r["participant"]: r["reasons"] for r in fit["refused"]}
    assert refused["fixture-proven@1.1.0"] == ["missing port agent.task/v1", "missing port agent.tools/v1"]
    again = run_cli(["new", "version", "fixture-proven", "1.1.0"], env_good)
    assert again.code == 2 and "exists already" in again.stderr


def test_new_version_repins_the_install(nullius_env, tmp_path):
    catalogue = tmp_path / "cat"
    shutil.copytree(EXAMPLE_CATALOGUE, catalogue)
    env = {**nullius_env, "NULLIUS_CATALOGUE": str(catalogue)}
    assert run_cli(["new", "version", "qwen-code", "0.25.0"], env, in_process=True).code == 0
    data = json.loads((catalogue / "agents" / "qwen-code" / "agent.json").read_text())
    assert data["versions"]["0.25.0"]["install"] == {"npm": ["@qwen-code/qwen-code@0.25.0"]}
    assert data["versions"]["default"] == "0.24.4"
    assert run_cli(["check"], env, in_process=True).code == 0


def test_json_logs(env_main):
    result = run_cli(["--log-format", "json", "plugins", "--json"], env_main)  # `paths` loads no plugin
    lines = [json.loads(line) for line in result.stderr.splitlines()]
    broken = [line for line in lines if line.get("plugin") == "fixture-broken"]
    assert broken and broken[0]["level"] == "warning" and broken[0]["distribution"] == "nullius-fixture-broken"


def test_help_honours_plugin_options(env_main):
    shown = run_cli(["--help"], env_main)
    assert "fixture-broken" in shown.stderr
    blocked = run_cli(["-p", "no:fixture-broken", "-p", "no:fixture", "--help"], env_main)
    assert "fixture-broken" not in blocked.stderr
    assert "fixture-hello" not in blocked.stdout


def test_new_version_of_a_benchmark_still_checks(nullius_env, tmp_path):
    template = ROOT / "examples" / "benchmark-plugin-template" / "nullius_bench_example" / "catalogue"
    catalogue = tmp_path / "cat"
    shutil.copytree(template, catalogue)
    env = {**nullius_env, "NULLIUS_CATALOGUE": str(catalogue)}
    assert run_cli(["new", "version", "example-arith", "v2"], env, in_process=True).code == 0
    data = json.loads((catalogue / "benchmarks" / "example-arith" / "standard.json").read_text())
    assert data["versions"]["default"] == "0.1.0" and "datasets" in data
    check = run_cli(["check"], env, in_process=True)
    assert check.code == 2
    lines = check.stderr.strip().splitlines()
    assert len(lines) == 1 and '$.versions.v2.upstream.tested: expected a full commit' in lines[0]


@pytest.mark.parametrize("command", [["run", "scored", "oracle"], ["prove", "scored"]])
def test_a_jobs_dir_that_cannot_be_made_is_refused(nullius_env, tmp_path, command):
    catalogue = tmp_path / "catalogue"
    shutil.copytree(ROOT / "tests" / "fixtures" / "catalogue", catalogue)
    env = {**nullius_env, "NULLIUS_CATALOGUE": str(catalogue)}
    afile = tmp_path / "afile"
    afile.write_text("x")
    before = sorted(tmp_path.rglob("*"))
    for jobs_dir in (afile / "jobs", afile):
        result = run_cli([*command, "--jobs-dir", str(jobs_dir)], env)
        assert result.code == 2, result.output
        assert "Traceback" not in result.output
        assert result.stderr.splitlines() == [f"nullius: --jobs-dir {jobs_dir}: cannot be made: {afile} is a file, not a folder"]
    assert sorted(tmp_path.rglob("*")) == before and afile.read_text() == "x"


def test_list_prints_a_definitions_words_as_written(nullius_env):
    """A table cell is text, not rich markup: Qwen Code's shipped fidelity fields keep their brackets."""
    result = run_cli(["list"], {**nullius_env, "COLUMNS": "400"}, in_process=True)
    assert result.code == 0, result.output
    assert "tools[ask_user_question]" in result.stdout and "tools[enter_plan_mode]" in result.stdout


def _proving_catalogue(root: Path) -> Path:
    """A user catalogue whose proofs hold every field the standard has a proof record, and older ones that hold fewer."""
    catalogue = root / "catalogue"
    bench = catalogue / "benchmarks" / "scored"
    shutil.copytree(ROOT / "tests" / "fixtures" / "catalogue" / "benchmarks" / "scored", bench)
    standard = json.loads((bench / "standard.json").read_text())
    standard["proven"] = {"test": {
        "units": {"units": 3, "passed": "3 ids, the same twice, unique", "date": "2026-11-30"},
        "nop": {"passed": "mean 0.0000 over 3", "value": 0.0, "expect": {"at_most": 0.0}, "units": 3, "job": "J-nop", "source": "nullius",
                "date": "2026-11-30"},
        "failed": {"oracle": {"passed": "mean 0.2000 over 3", "value": 0.2, "expect": {"at_least": 0.4}, "units": 3, "job": "J-oracle",
                              "source": "adapter", "errors": 1, "date": "2026-12-01"}},
    }}
    (bench / "standard.json").write_text(json.dumps(standard))
    agent = catalogue / "agents" / "adapter"
    agent.mkdir(parents=True)
    tools = {"passed": "2/2", "kit_version": 2, "score": 0.8, "model": "gpt-5-mini", "version": "2.2.2", "backend": "docker", "repeat": 3,
             "checks": {"arguments": "2/3", "one-tool": "3/3"}, "date": "2026-12-01", "job": "J-tools",
             "skills": {"chain": {"passed": "2/3", "ok": True}, "decoys": {"passed": "1/3", "ok": False}, "retry": {"passed": "0/3", "ok": False}}}
    (agent / "agent.json").write_text(json.dumps({
        "schema": "nullius.agent/v1",
        "start": ["adapter-acp"],
        "model": {"api": "openai-responses"},
        "versions": {
            "default": "2.2.2",
            "2.2.2": {"upstream": {"npm": "adapter-acp", "version": "2.2.2", "core": "@openai/codex@0.160.1"},
                      "proven": {"agent.tools/v1": tools,
                                 "agent.task/v1": {"passed": "3/3"},  # an older proof: no kit version, no date, no job
                                 "agent.workspace/v1": {"passed": "1/2", "model": "gpt-5-mini", "date": "2026-12-01"},
                                 "agent.conversation/v1": {"passed": "1/1", "version": "2.1.0", "date": "2026-11-01"}}},
            "2.1.0": {"upstream": {"npm": "adapter-acp", "version": "2.1.0"}},
        },
    }))
    return catalogue


def test_list_shows_every_field_of_each_proof_and_nothing_a_proof_does_not_record(nullius_env, tmp_path):
    env = {**nullius_env, "NULLIUS_CATALOGUE": str(_proving_catalogue(tmp_path))}
    listed = json.loads(run_cli(["list", "--json"], env, in_process=True).stdout)
    row = next(a for a in listed["agents"] if a["ref"] == "adapter@2.2.2")
    assert row["core"] == "@openai/codex@0.160.1"
    assert next(a for a in listed["agents"] if a["ref"] == "adapter@2.1.0")["core"] is None
    assert row["offers"]["agent.tools/v1"] == {
        "passed": "2/2", "ok": None, "kit_version": 2, "skills": ["chain"],
        "skill_checks": {"chain": {"passed": "2/3", "ok": True}, "decoys": {"passed": "1/3", "ok": False}, "retry": {"passed": "0/3", "ok": False}},
        "score": 0.8, "model": "gpt-5-mini", "version": "2.2.2", "backend": "docker", "repeat": 3,
        "checks": {"arguments": "2/3", "one-tool": "3/3"}, "date": "2026-12-01", "job": "J-tools"}
    older = row["offers"]["agent.task/v1"]
    assert older["kit_version"] == 1 and older["skill_checks"] is None  # read as kit v1; nothing recorded of skills
    assert all(older[k] is None for k in ("score", "model", "version", "backend", "repeat", "checks", "date", "job"))
    assert set(row["offers"]) == {"agent.tools/v1", "agent.task/v1"}
    assert row["not_offered"]["agent.workspace/v1"]["why"] == "its proof failed: 1/2"
    assert row["not_offered"]["agent.conversation/v1"]["why"] == "proven on upstream version 2.1.0, this is 2.2.2"
    bench = next(b for b in listed["benchmarks"] if b["ref"] == "scored")
    assert bench["proven"] == {"test": ["nop", "units"]}  # the names, as before; the records whole beside them
    assert bench["records"]["test"]["nop"]["job"] == "J-nop" and bench["records"]["test"]["failed"]["oracle"]["value"] == 0.2

    shown = run_cli(["list"], {**env, "COLUMNS": "400"}, in_process=True)
    assert shown.code == 0, shown.output
    lines = [line.strip() for line in shown.stdout.splitlines()]
    assert ("adapter@2.2.2 agent.tools/v1: passed 2/2, kit v2, skills chain 2/3, decoys 1/3 (not shown), retry 0/3 (not shown), "
            "repeat 3 (arguments 2/3, one-tool 3/3), score 0.8, model gpt-5-mini, on upstream 2.2.2, backend docker, date 2026-12-01, job J-tools") in lines
    assert "adapter@2.2.2 agent.task/v1: passed 3/3, kit v1" in lines  # nothing said that the proof does not record
    assert ("adapter@2.2.2 agent.workspace/v1: passed 1/2, kit v1, model gpt-5-mini, date 2026-12-01 (not offered: its proof failed: 1/2)") in lines
    assert ("adapter@2.2.2 agent.conversation/v1: passed 1/1, kit v1, on upstream 2.1.0, date 2026-11-01 "
            "(not offered: proven on upstream version 2.1.0, this is 2.2.2)") in lines
    assert "scored test units: passed 3 ids, the same twice, unique, units 3, date 2026-11-30" in lines
    assert "scored test nop: passed mean 0.0000 over 3, value 0 (at most 0), units 3, source nullius, job J-nop, date 2026-11-30" in lines
    assert ("scored test oracle: failed, taken back: passed mean 0.2000 over 3, value 0.2 (at least 0.4), units 3, errors 1, "
            "source adapter, job J-oracle, date 2026-12-01") in lines
    assert "core @openai/codex@0.160.1" in shown.stdout  # under the version's package, in the agents' table


@pytest.mark.parametrize("core", ["@openai/codex", "@openai/codex@^0.160", "codex>=0.1", "", 3])
def test_check_refuses_a_core_that_is_not_a_pinned_package(nullius_env, tmp_path, core):
    catalogue = _proving_catalogue(tmp_path)
    file = catalogue / "agents" / "adapter" / "agent.json"
    raw = json.loads(file.read_text())
    raw["versions"]["2.1.0"]["upstream"]["core"] = core
    file.write_text(json.dumps(raw))
    checked = run_cli(["check", str(file)], nullius_env, in_process=True)
    assert checked.code == 2 and "Traceback" not in checked.output
    found = "the integer 3" if core == 3 else repr(core)
    expected = "a string" if core == 3 else "the core it runs as a pinned package (name@version or name==version)"
    assert checked.stderr.splitlines() == [f"{file}: $.versions[\"2.1.0\"].upstream.core: expected {expected}, found {found}"]
    raw["versions"]["2.1.0"]["upstream"]["core"] = "codex-core==0.160.1"  # a PyPI pin is a pin too
    file.write_text(json.dumps(raw))
    assert run_cli(["check", str(file)], nullius_env, in_process=True).code == 0


def test_a_new_version_does_not_carry_over_the_core(nullius_env, tmp_path):
    env = {**nullius_env, "NULLIUS_CATALOGUE": str(_proving_catalogue(tmp_path))}
    assert run_cli(["new", "version", "adapter", "2.3.0"], env, in_process=True).code == 0
    listed = {a["ref"]: a for a in json.loads(run_cli(["list", "--json"], env, in_process=True).stdout)["agents"]}
    assert listed["adapter@2.2.2"]["core"] == "@openai/codex@0.160.1"
    assert listed["adapter@2.3.0"]["core"] is None and listed["adapter@2.3.0"]["version"] == "2.3.0"
