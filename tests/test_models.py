"""Definitions read strictly and written back without losing meaning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nullius_core.definitions import (
    Agent,
    Capability,
    CatalogueEntry,
    DefinitionError,
    Standard,
    UpstreamSettings,
    load,
    structure,
    unstructure,
)

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
KITS = ROOT / "nullius_plugins" / "ports_v1" / "kits"
FIXTURE_CATALOGUE = ROOT / "tests" / "fixtures" / "plugins" / "nullius-fixture-plugin" / "nullius_fixture_plugin" / "catalogue"

ROUND_TRIP = [
    (EXAMPLES / "catalogue" / "agents" / "qwen-code" / "agent.json", Agent),
    (EXAMPLES / "benchmark-plugin-template" / "nullius_bench_example" / "catalogue" / "benchmarks" / "example-arith" / "standard.json", Standard),
    (EXAMPLES / "benchmark-plugin-template" / "nullius_bench_example" / "catalogue" / "benchmarks" / "example-arith" / "benchmark.json", CatalogueEntry),
    (EXAMPLES / "benchmark-plugin-template" / "nullius_bench_example" / "catalogue" / "benchmarks" / "example-arith" / "upstream-settings.json", UpstreamSettings),
    (KITS / "agent-tools-v1" / "standard.json", Standard),
    (FIXTURE_CATALOGUE / "agents" / "fixture-proven" / "agent.json", Agent),
    (FIXTURE_CATALOGUE / "agents" / "fixture-versions" / "agent.json", Agent),
    (FIXTURE_CATALOGUE / "capabilities" / "fixture-mem" / "capability.json", Capability),
]


@pytest.mark.parametrize("path,cls", ROUND_TRIP, ids=lambda v: v.name if isinstance(v, Path) else v.__name__)
def test_round_trip_keeps_every_key(path, cls):
    raw = json.loads(path.read_text())
    assert unstructure(structure(raw, cls)) == raw


def test_extension_keys_survive_and_other_unknown_keys_do_not(tmp_path):
    raw = json.loads(ROUND_TRIP[0][0].read_text())
    raw["x-team"] = {"owner": "evals", "notes": [1, 2]}
    raw["versions"]["0.24.4"]["x-where"] = "nested"
    with pytest.raises(DefinitionError) as err:
        structure(raw, Agent)
    assert [p.path for p in err.value.problems] == ['$.versions["0.24.4"]["x-where"]']
    del raw["versions"]["0.24.4"]["x-where"]
    agent = structure(raw, Agent)
    assert agent.extensions == {"x-team": {"owner": "evals", "notes": [1, 2]}}
    assert unstructure(agent) == raw


def test_proof_keeps_fields_written_by_a_newer_nullius():
    raw = {
        "schema": "nullius.agent/v1",
        "upstream": {"npm": "a", "version": "1"},
        "start": ["a"],
        "proven": {"agent.task/v1": {"passed": "3/3", "x-fidelity": {"verdict": "same"}}},
    }
    assert unstructure(structure(raw, Agent)) == raw


def test_no_coercion_of_primitives():
    raw = {"datasets": {"test": {"units": "3"}}, "needs": "agent.task/v1", "kit": {"port": "agent.task/v1", "basic": ["a"], "kit_version": True}}
    with pytest.raises(DefinitionError) as err:
        structure(raw, Standard)
    rendered = [p.render() for p in err.value.problems]
    assert "$.datasets.test.units: expected an integer, found the string \"3\"" in rendered
    assert "$.needs: expected a list of strings, found the string \"agent.task/v1\"" in rendered
    assert "$.kit.kit_version: expected an integer, found true" in rendered


def test_versions_resolve_over_the_top_of_the_file():
    agent = load(ROUND_TRIP[0][0])
    resolved = agent.resolve("qwen-code")
    assert resolved.ref == "qwen-code@0.24.4"
    assert resolved.upstream.npm == "@qwen-code/qwen-code"
    assert resolved.start == ["{install}/node_modules/.bin/qwen", "--acp"]
    assert resolved.options["approval_mode"].default == "yolo"
    with pytest.raises(KeyError):
        agent.resolve("qwen-code", "9.9.9")


def test_older_capability_names_are_read_as_the_canonical_ones(tmp_path):
    folder = tmp_path / "features" / "old"
    folder.mkdir(parents=True)
    (folder / "feature.json").write_text(
        json.dumps(
            {
                "schema": "nullius.feature/v1",
                "upstream": {"pypi": "m", "version": "1"},
                "start": ["python3", "{here}/wrapper_old.py"],
                "proven": {"feature.memory/v1": {"passed": "1/1", "model": "m"}},
            }
        )
    )
    capability = load(folder / "feature.json")
    assert isinstance(capability, Capability)
    assert list(capability.proven) == ["cap.memory/v1"]
    assert capability.proven["cap.memory/v1"].model == "m"
    assert capability.start == ["python3", "{here}/wrapper_old.py"]
    bench = tmp_path / "standard.json"
    bench.write_text(json.dumps({"family": "feature", "needs": ["feature.memory/v1"], "datasets": {"t": {"units": 1}}, "kit": {"port": "feature.memory/v1", "basic": ["x"]}}))
    standard = load(bench)
    assert standard.family == "capability" and standard.needs == ["cap.memory/v1"] and standard.kit.port == "cap.memory/v1"


def test_scaffolds_leave_exactly_the_parts_to_fill_in(nullius_session):
    from nullius_core.catalogue.checks import check_file
    from nullius_core.catalogue.scaffold import new_entry

    session = nullius_session()
    ports = {p.name: p for p in session.ports}
    for kind in ("benchmark", "agent", "capability"):
        folder = new_entry(session.catalogue, kind, f"new-{kind}")
        session.forget_catalogue()
        entry = session.catalogue.get(kind, f"new-{kind}")
        assert entry.folder == folder and entry.from_user
        problems = check_file(entry.file, ports)
        if kind == "benchmark":
            assert sorted(p.path for p in problems) == ["$.datasets.test.sha256", "$.upstream.tested"]
            assert all("FILL IN" in p.message for p in problems)
        else:
            assert problems == []
