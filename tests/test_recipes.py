"""Recipes (`--from-run FILE`): a run recipe's jobs named as the standard says and run one by one, prove and conform from
recipes, and every way a recipe is refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import ROOT

from nullius_core.testing import run_cli

CATALOGUE = ROOT / "tests" / "fixtures" / "catalogue"
PLAYER = "nullius_agent_reference.player"
KEY = "sk-upstream-held-by-the-relay-recipes-0123456789"


@pytest.fixture
def env(env_shared_installs, tmp_path):
    catalogue = tmp_path / "catalogue"
    shutil.copytree(CATALOGUE, catalogue)
    return {**env_shared_installs, "NULLIUS_CATALOGUE": str(catalogue), "NULLIUS_JOBS_DIR": str(tmp_path / "jobs"),
            "OPENAI_COMPATIBLE_API_KEY": KEY}


def recipe(tmp_path: Path, file: str, **fields) -> Path:
    path = tmp_path / f"{file}.json"
    path.write_text(json.dumps(fields))
    return path


def test_a_run_recipe_compiles_to_a_job_per_participant_and_machine_each_run_by_name(env, tmp_path):
    path = recipe(tmp_path, "controls", name="ctl", benchmark="faulty", datasets=["test"], others=["nop", "oracle"], machines=2, limit=2)
    several = run_cli(["run", "--from-run", str(path)], env)
    assert several.code == 2, several.output
    names = ["ctl-test-nop-shard-1of2", "ctl-test-nop-shard-2of2", "ctl-test-oracle-shard-1of2", "ctl-test-oracle-shard-2of2"]
    assert f"compiles to 4 jobs: give --job-name, one of {', '.join(names)}" in several.stderr
    for name in names:
        ran = run_cli(["run", "--from-run", str(path), "--job-name", name], env)
        assert ran.code == 0, ran.output
    jobs = tmp_path / "jobs"
    config = json.loads((jobs / "ctl-test-oracle-shard-2of2" / "config.json").read_text())["standard"]
    assert (config["participant"], config["shard"]["index"], config["shard"]["of"], config["launch"], config["limit"]) == \
        ("oracle", 2, 2, "ctl-test-oracle", 2)
    merged = run_cli(["merge", str(jobs / "ctl-test-oracle-shard-1of2"), str(jobs / "ctl-test-oracle-shard-2of2"), "-o", str(jobs / "m")], env)
    assert merged.code == 0, merged.output  # the shards of one job are one launch
    assert json.loads((jobs / "m" / "result.json").read_text())["standard"]["passed"] == 4


def test_a_recipes_options_and_pins_reach_the_run_and_nothing_else_may_be_given(env, fake_model, tmp_path):
    fake_model.use({"default": {"text": "alpha"}})
    path = recipe(tmp_path, "one", name="one", benchmark="faulty", agents=["scripted"], model="fake-1", provider="openai-compatible",
                  base_url=fake_model.openai_base_url, unsandboxed=True, limit=1, bench_options={"mode": "workspace"},
                  options={"mode": "ask"})
    ran = run_cli(["run", "--from-run", str(path)], env)  # one job: no name needed
    assert ran.code == 0, ran.output
    config = json.loads((tmp_path / "jobs" / "one-default-scripted" / "config.json").read_text())["standard"]
    assert config["options"]["mode"] == "workspace" and config["agent"]["options"]["mode"] == "ask" and config["model"] == "fake-1"
    more = run_cli(["run", "--from-run", str(path), "--limit", "3", "-j", "1"], env)
    assert more.code == 2 and "run --from-run takes what to run from the recipe alone: --concurrency, --limit do not go with it" in more.stderr
    named = run_cli(["run", "faulty", "oracle", "--from-run", str(path)], env)
    assert named.code == 2 and "takes the benchmark and the participant from the recipe" in named.stderr
    pinned = recipe(tmp_path, "pinned", name="p", benchmark="faulty", agents=["scripted"], model="fake-1", provider="openai-compatible",
                    base_url=fake_model.openai_base_url, unsandboxed=True, served_by={"model": ["anthropic"]})
    refused = run_cli(["run", "--from-run", str(pinned)], env)
    assert refused.code == 2 and "provider 'openai-compatible' routes no model to several providers" in refused.stderr


@pytest.mark.parametrize("fields,why", [
    ({"name": "x y", "benchmark": "faulty", "others": ["nop"]}, "$.name: expected a name of letters, digits"),
    ({"name": "x", "benchmark": "faulty"}, "$.agents: expected a participant"),
    ({"name": "x", "benchmark": "faulty", "others": ["judge"]}, "$.others[0]"),
    ({"name": "x", "benchmark": "faulty", "others": ["nop"], "machines": 0}, "$.machines: expected a positive integer, found 0"),
    ({"name": "x", "benchmark": "faulty", "others": ["nop"], "colour": "red"}, "$.colour: unknown key"),
    ({"name": "x", "benchmark": "faulty", "others": ["nop"], "served_by": {"model": ["Anthropic"]}}, "$.served_by.model: expected provider slugs"),
    ({"kind": "prove", "benchmark": "faulty"}, "$.kind: expected a run recipe, found 'prove'"),
    ({"name": "x", "benchmark": "faulty", "others": ["nop"], "host": "-oProxyCommand=sh"}, "$.host: expected USER@HOST"),
    ({"name": "x", "benchmark": "faulty", "others": ["nop"], "ssh": {"port": 22}}, "$.ssh: expected a \"host\" beside it"),
    ({"name": "x", "benchmark": "faulty", "others": ["nop"], "host": "r@h", "ssh": {"port": 0}}, "$.ssh.port: expected a TCP port"),
    ({"name": "x", "benchmark": "faulty", "others": ["nop"], "host": "r@h", "ssh": {"identity": "id"}},
     "$.ssh.identity: expected an absolute path, found 'id'"),
])
def test_a_malformed_recipe_names_its_file_and_field(env, tmp_path, fields, why):
    path = recipe(tmp_path, "bad", **fields)
    ran = run_cli(["run", "--from-run", str(path)], env)
    assert ran.code == 2 and why in ran.stderr and str(path) in ran.stderr and "Traceback" not in ran.output, ran.output


def test_paper_and_leaderboard_choices(env, fake_model, tmp_path):
    paper = recipe(tmp_path, "paper", name="pp", benchmark="talk", others=["original"], model="other-model", model_choice="paper",
                   provider="openai-compatible", base_url=fake_model.openai_base_url)
    refused = run_cli(["run", "--from-run", str(paper)], env)
    assert refused.code == 2 and "$.model: model_choice paper runs the paper's models (paper-model), not 'other-model'" in refused.stderr
    judged = recipe(tmp_path, "judged", name="pj", benchmark="talk", others=["original"], model="paper-model", model_choice="paper",
                    judge_model="judge-other", provider="openai-compatible", base_url=fake_model.openai_base_url)
    refused = run_cli(["run", "--from-run", str(judged)], env)
    assert refused.code == 2 and "$.judge_model: model_choice paper keeps the official judge (judge-official)" in refused.stderr
    fake_model.use({"default": {"text": "PASS"}})
    board = recipe(tmp_path, "board", name="lb", benchmark="talk", others=["oracle"], model_choice="leaderboard", limit=1,
                   provider="openai-compatible", base_url=fake_model.openai_base_url)
    ran = run_cli(["run", "--from-run", str(board)], env)
    assert ran.code == 0, ran.output
    config = json.loads((tmp_path / "jobs" / "lb-default-oracle" / "config.json").read_text())["standard"]
    assert config["like_leaderboard"] is True and config["judge"]["model"] == "judge-board" and config["repeat"] == 2


def test_prove_and_conform_run_from_their_recipes(env, fake_model, tmp_path, catalogue_copy=None):
    prove = recipe(tmp_path, "prove", kind="prove", benchmark="faulty", limit=2, bench_options={"mode": "long"})
    proved = run_cli(["prove", "--from-run", str(prove), "--json"], env)
    assert proved.code == 0, proved.output
    checks = json.loads(proved.stdout)["test"]
    assert checks["oracle"]["ok"] and checks["oracle"]["limit"] == 2 and checks["leak"]["ok"]
    fake_model.use(f"{PLAYER}:respond")
    conform = recipe(tmp_path, "conform", kind="conform", participant="scripted", model="fake-model", provider="openai-compatible",
                     base_url=fake_model.openai_base_url, unsandboxed=True, ports=["agent.task/v1"])
    conformed = run_cli(["conform", "--from-run", str(conform), "--json"], env)
    assert conformed.code == 0, conformed.output
    [result] = json.loads(conformed.stdout)
    assert result["port"] == "agent.task/v1" and result["proven"] and result["passed"] == "3/3"
    extra = run_cli(["conform", "--from-run", str(conform), "--repeat", "3"], env)
    assert extra.code == 2 and "--repeat do not go with it" in extra.stderr


def test_a_recipe_with_a_host_runs_there_and_never_here(env, tmp_path):
    """Its jobs' command is `nullius host run` (the app's); `nullius run --from-run` refuses it, naming that command."""
    from nullius_core.recipes import compile_run, read

    path = recipe(tmp_path, "away", name="away", benchmark="faulty", datasets=["test"], others=["oracle"], host="runner@build-box")
    jobs = compile_run(read(path, "run"))
    assert jobs[0].command(path) == ["nullius", "host", "run", "--from-run", str(path), "--job-name", "away-test-oracle"]
    refused = run_cli(["run", "--from-run", str(path)], env)
    assert refused.code == 2 and f"runs its jobs on runner@build-box: nullius host run --from-run {path}" in refused.stderr
    assert not (tmp_path / "jobs").exists()
