"""The plugin is found, its definition is valid, it ships no data, and fit names the agents with its skills."""

import json

from nullius_core.catalogue.checks import check_file

from nullius_bench_bfcl import plugin

FOLDER = plugin.CATALOGUE / "benchmarks" / "bfcl"


def test_benchmark_is_in_the_catalogue(nullius_session):
    entry = nullius_session().catalogue.get("benchmark", "bfcl")
    assert entry is not None, "is nullius-bench-bfcl installed (./dev setup)?"
    assert entry.origin == "bfcl" and entry.file.parent == FOLDER


def test_definition_checks_clean(nullius_session):
    session = nullius_session()
    entry = session.catalogue.get("benchmark", "bfcl")
    assert check_file(entry.file, {p.name: p for p in session.ports}) == []


def test_nullius_check_and_list(nullius_cli):
    checked = nullius_cli("check", str(FOLDER), in_process=True)
    assert checked.code == 0 and "ok" in checked.stdout, checked.output
    listed = json.loads(nullius_cli("list", "--json", in_process=True).stdout)["benchmarks"]
    refs = [b["ref"] for b in listed]
    assert "bfcl@2026.3.23" in refs and "bfcl@2026.3.23-irrelevance" in refs, refs


def test_every_category_is_a_dataset_and_every_file_is_pinned():
    standard = json.loads((FOLDER / "standard.json").read_text())
    datasets = {**standard["datasets"], **standard["versions"]["2026.3.23-irrelevance"]["datasets"]}
    assert sorted(datasets) == sorted(standard["x-bfcl"]["categories"])
    assert sum(d["units"] for d in datasets.values()) == 4441  # of the 4,706: web_search, memory, format_sensitivity out
    assert all(d["package"] == "bfcl_eval" and len(d["sha256"]) == 64 for d in datasets.values())
    assert standard["driver"]["install"]["no_deps"] == ["bfcl-eval==2026.3.23"]
    assert not any(p.split("==")[0].lower() in ("torch", "faiss-cpu", "sentence-transformers")
                   for p in standard["driver"]["install"]["pip"])


def test_the_plugin_ships_no_data():
    files = sorted(p.name for p in FOLDER.iterdir() if p.name != "__pycache__")
    assert files == ["benchmark.json", "driver.py", "mcp_server.py", "nullius_bfcl", "standard.json", "upstream-settings.json"]
