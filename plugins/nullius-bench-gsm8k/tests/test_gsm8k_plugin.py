"""The plugin is found, and its definition is valid."""

import hashlib
import json

from nullius_core.catalogue.checks import check_file

from nullius_bench_gsm8k import plugin


def test_benchmark_is_in_the_catalogue(nullius_session):
    entry = nullius_session().catalogue.get("benchmark", "gsm8k")
    assert entry is not None, "is nullius-bench-gsm8k installed (./dev setup)?"
    assert entry.origin == "gsm8k"
    assert entry.file.parent == plugin.CATALOGUE / "benchmarks" / "gsm8k"


def test_definition_checks_clean(nullius_session):
    session = nullius_session()
    entry = session.catalogue.get("benchmark", "gsm8k")
    assert check_file(entry.file, {p.name: p for p in session.ports}) == []


def test_nullius_check_and_list(nullius_cli):
    checked = nullius_cli("check", str(plugin.CATALOGUE / "benchmarks" / "gsm8k"), in_process=True)
    assert checked.code == 0 and "ok" in checked.stdout, checked.output
    listed = nullius_cli("list", "--json", in_process=True)
    assert listed.code == 0, listed.output
    assert "gsm8k" in [b["ref"] for b in json.loads(listed.stdout)["benchmarks"]]


def test_the_plugin_ships_the_test_split_with_its_licence_and_its_pin():
    folder = plugin.CATALOGUE / "benchmarks" / "gsm8k"
    assert sorted(p.name for p in folder.iterdir() if p.name != "__pycache__") == [
        "benchmark.json", "data", "driver.py", "standard.json", "upstream-settings.json"]
    assert sorted(p.name for p in (folder / "data").iterdir()) == ["LICENSE", "SOURCE.md", "test.jsonl"]
    assert "MIT License" in (folder / "data" / "LICENSE").read_text() and "Copyright (c) 2021 OpenAI" in (folder / "data" / "LICENSE").read_text()
    dataset = json.loads((folder / "standard.json").read_text())["datasets"]["test"]
    assert dataset["path"] == "{here}/data/test.jsonl" and plugin.TEST_SPLIT == folder / "data" / "test.jsonl"
    assert hashlib.sha256(plugin.TEST_SPLIT.read_bytes()).hexdigest() == dataset["sha256"]
    assert len(plugin.TEST_SPLIT.read_text(encoding="utf-8").splitlines()) == dataset["units"] == 1319