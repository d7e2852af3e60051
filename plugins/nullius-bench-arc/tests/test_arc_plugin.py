"""The plugin is found, and its definition is valid."""

import json

from nullius_core.catalogue.checks import check_file

from nullius_bench_arc import plugin


def test_benchmark_is_in_the_catalogue(nullius_session):
    entry = nullius_session().catalogue.get("benchmark", "arc-agi")
    assert entry is not None, "is nullius-bench-arc installed (./dev setup)?"
    assert entry.origin == "arc"
    assert entry.file.parent == plugin.CATALOGUE / "benchmarks" / "arc-agi"


def test_definition_checks_clean(nullius_session):
    session = nullius_session()
    entry = session.catalogue.get("benchmark", "arc-agi")
    assert check_file(entry.file, {p.name: p for p in session.ports}) == []


def test_nullius_check_and_list(nullius_cli):
    checked = nullius_cli("check", str(plugin.CATALOGUE / "benchmarks" / "arc-agi"), in_process=True)
    assert checked.code == 0 and "ok" in checked.stdout, checked.output
    listed = nullius_cli("list", "--json", in_process=True)
    assert listed.code == 0, listed.output
    assert "arc-agi" in [b["ref"] for b in json.loads(listed.stdout)["benchmarks"]]


def test_the_plugin_ships_no_data():
    folder = plugin.CATALOGUE / "benchmarks" / "arc-agi"
    assert sorted(p.name for p in folder.iterdir() if p.name != "__pycache__") == [
        "benchmark.json", "driver.py", "standard.json", "upstream-settings.json"]


def test_the_workspace_way_needs_agent_workspace_instead_of_agent_task(nullius_session):
    from nullius_core.ports import needs_of

    session = nullius_session()
    standard = session.catalogue.load(session.catalogue.get("benchmark", "arc-agi")).resolve("arc-agi").standard
    assert needs_of(standard) == needs_of(standard, {"answer": "task"}) == ["agent.task/v1"]
    assert needs_of(standard, {"answer": "workspace"}) == ["agent.workspace/v1"]
    assert standard.limits.attempts == 2 and standard.leaderboard.repeat == 2  # ARC's pass@2
