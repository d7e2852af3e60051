"""`nullius check` refuses a broken definition precisely: FILE: $.path: expected, found; exit 2; no traceback.

One test per kind of error, each through the real command.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from nullius_core.testing import run_cli

GOOD_AGENT = {
    "schema": "nullius.agent/v1",
    "upstream": {"npm": "some-agent", "version": "1.0.0"},
    "start": ["{install}/bin/agent"],
    "model": {"api": "openai-chat", "env": {"OPENAI_BASE_URL": "{base_url}", "EFFORT": "{opt_reasoning_effort}"}},
    "options": {"reasoning_effort": {"summary": "the vendor's effort", "values": ["low", "high"], "default": "low"}},
}


def write(tmp_path: Path, data, name="agent.json") -> Path:
    folder = tmp_path / "defs"
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2))
    return path


def refused(env, path) -> list[str]:
    result = run_cli(["check", str(path)], env, in_process=True)
    assert result.code == 2, result.output
    assert "Traceback" not in result.output
    return result.stderr.strip().splitlines()


def test_a_good_definition_passes(nullius_env, tmp_path):
    result = run_cli(["check", str(write(tmp_path, GOOD_AGENT))], nullius_env, in_process=True)
    assert result.code == 0 and "ok: 1 definition checked" in result.stdout


def test_missing_key(nullius_env, tmp_path):
    data = {k: v for k, v in GOOD_AGENT.items() if k != "schema"}
    path = write(tmp_path, data)
    assert refused(nullius_env, path) == [f"{path}: $.schema: required key missing: expected 'nullius.agent/v1'"]


def test_unknown_key(nullius_env, tmp_path):
    path = write(tmp_path, {**GOOD_AGENT, "strat": ["x"]})
    [line] = refused(nullius_env, path)
    assert line.startswith(f"{path}: $.strat: unknown key: expected one of ")
    assert "start" in line


def test_wrong_type(nullius_env, tmp_path):
    path = write(tmp_path, {**GOOD_AGENT, "start": "bin/agent --acp"})
    assert refused(nullius_env, path) == [f'{path}: $.start: expected a list of strings, found the string "bin/agent --acp"']


def test_bad_port_name(nullius_env, tmp_path):
    path = write(tmp_path, {**GOOD_AGENT, "proven": {"agent.Tools": {"passed": "2/2"}}})
    assert refused(nullius_env, path) == [
        f'{path}: $.proven["agent.Tools"]: expected a port name such as agent.workspace/v1 or cap.memory/v1, found \'agent.Tools\''
    ]


def test_unregistered_port(nullius_env, tmp_path):
    path = write(tmp_path, {**GOOD_AGENT, "proven": {"agent.teleport/v1": {"passed": "1/1"}}})
    [line] = refused(nullius_env, path)
    assert line.startswith(f'{path}: $.proven["agent.teleport/v1"]: expected a registered port (agent.browser/v1, ')


def test_option_default_its_values_do_not_allow(nullius_env, tmp_path):
    options = {"reasoning_effort": {"summary": "s", "values": ["low", "high"], "default": "max"}}
    path = write(tmp_path, {**GOOD_AGENT, "options": options})
    assert refused(nullius_env, path) == [f"{path}: $.options.reasoning_effort.default: expected one of 'low', 'high', found 'max'"]


def test_slot_naming_no_option(nullius_env, tmp_path):
    model = {"api": "openai-chat", "env": {"EFFORT": "{opt_effort}"}}
    path = write(tmp_path, {**GOOD_AGENT, "model": model})
    assert refused(nullius_env, path) == [
        f"{path}: $.model.env.EFFORT: expected {{opt_<name>}} to name an option (reasoning_effort), found {{opt_effort}}"
    ]


def test_not_json(nullius_env, tmp_path):
    path = write(tmp_path, '{"schema": "nullius.agent/v1",,}')
    [line] = refused(nullius_env, path)
    assert line.startswith(f"{path}: $ (line 1, column 31): expected JSON, found a syntax error")


def test_needed_skill_its_kit_does_not_name(nullius_env, tmp_path):
    template = Path(__file__).resolve().parent.parent / "examples" / "benchmark-plugin-template" / "nullius_bench_example" / "catalogue" / "benchmarks" / "example-arith"
    folder = tmp_path / "benchmarks" / "bench"
    folder.mkdir(parents=True)
    for name in ("benchmark.json", "upstream-settings.json", "driver.py"):
        (folder / name).write_text((template / name).read_text())
    shutil.copytree(template / "data", folder / "data")
    standard = json.loads((template / "standard.json").read_text())
    standard["needs"] = ["agent.tools/v1"]
    standard["needs_skills"] = {"agent.tools/v1": ["decoys", "juggling"]}
    (folder / "standard.json").write_text(json.dumps(standard))
    assert refused(nullius_env, folder / "standard.json") == [
        f'{folder / "standard.json"}: $.needs_skills["agent.tools/v1"][1]: expected a skill the kit of agent.tools/v1 names (decoys, chain, retry), found \'juggling\''
    ]


def test_benchmark_without_its_inventory_of_settings(nullius_env, tmp_path):
    template = Path(__file__).resolve().parent.parent / "examples" / "benchmark-plugin-template" / "nullius_bench_example" / "catalogue" / "benchmarks" / "example-arith"
    folder = tmp_path / "bench"
    folder.mkdir()
    for name in ("standard.json", "benchmark.json"):
        (folder / name).write_text((template / name).read_text())
    shutil.copytree(template / "data", folder / "data")
    assert refused(nullius_env, folder / "standard.json") == [f"{folder / 'upstream-settings.json'}: $: expected a file here, found none"]
    settings = folder / "upstream-settings.json"
    settings.write_text(json.dumps({"settings": [{"entry": "eval.py", "setting": "--shots", "nullius": "option:shots"}]}))
    assert refused(nullius_env, folder / "standard.json") == [
        f"{settings}: $.settings[0].nullius: expected a option some version has (none), found option:shots"
    ]
    settings.write_text(json.dumps({"settings": [{"entry": "eval.py", "setting": "--seed", "nullius": "maybe"}]}))
    [line] = refused(nullius_env, folder / "standard.json")
    assert line.startswith(f"{settings}: $.settings[0].nullius: expected exactly one of option:<name>, setup:original")


def test_every_problem_of_a_file_at_once(nullius_env, tmp_path):
    data = {
        "schema": "nullius.agent/v2",
        "upstream": {"npm": "a", "version": 1},
        "start": ["a", 2],
        "model": {"api": "grpc"},
        "options": {"o": {"summary": "s", "values": ["x"], "default": "y"}},
        "colour": "blue",
    }
    path = write(tmp_path, data)
    lines = refused(nullius_env, path)
    paths = sorted(line.split(": ")[1] for line in lines)
    assert paths == sorted(["$.upstream.version", "$.start[1]", "$.model.api", "$.options.o.default", "$.colour", "$.schema"])


@pytest.mark.parametrize("family,port", [("agent", "cap.memory/v1"), ("capability", "agent.task/v1")])
def test_port_of_the_wrong_family(nullius_env, tmp_path, family, port):
    data = {"family": family, "needs": [port], "datasets": {"t": {"units": 1}}, "kit": {"port": "agent.task/v1", "basic": ["a"]}}
    path = write(tmp_path, data, "standard.json")
    [line] = refused(nullius_env, path)
    assert line.startswith(f"{path}: $.needs[0]: expected a port of the {family} family")


# --- what a definition's folder, numbers and data may not do -----------------

TEMPLATE = Path(__file__).resolve().parent.parent / "examples" / "benchmark-plugin-template" / "nullius_bench_example" / "catalogue" / "benchmarks" / "example-arith"


def bench(tmp_path: Path, change=None) -> Path:
    """A copy of the template's benchmark (a good one), its standard.json changed by `change`."""
    folder = tmp_path / "benchmarks" / "arith"
    shutil.copytree(TEMPLATE, folder)
    standard = json.loads((folder / "standard.json").read_text())
    if change is not None:
        change(standard)
    (folder / "standard.json").write_text(json.dumps(standard, indent=2))
    return folder / "standard.json"


def test_the_template_benchmark_passes(nullius_env, tmp_path):
    result = run_cli(["check", str(bench(tmp_path))], nullius_env, in_process=True)
    assert result.code == 0, result.output


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_a_number_that_is_not_finite(nullius_env, tmp_path, constant):
    path = bench(tmp_path)
    text = path.read_text().replace('"at_least": 1.0', f'"at_least": {constant}')
    assert constant in text
    path.write_text(text)
    [line] = refused(nullius_env, path)
    assert line == f"{path}: $.controls.oracle.expect.at_least: expected a finite number (JSON has no NaN or Infinity), found {constant}"


def test_a_here_path_escaping_the_folder(nullius_env, tmp_path):
    (tmp_path / "benchmarks" / "outside.py").parent.mkdir(parents=True)
    (tmp_path / "benchmarks" / "outside.py").write_text("print('outside')\n")

    def change(standard):
        standard["driver"]["command"] = ["python3", "{here}/../outside.py"]

    path = bench(tmp_path, change)
    [line] = refused(nullius_env, path)
    assert line == (
        f"{path}: $.driver.command[1]: expected a path inside the definition's folder ({path.parent}), "
        f"found '{{here}}/../outside.py', which is {tmp_path / 'benchmarks' / 'outside.py'}"
    )


def test_a_link_in_the_folder_resolving_outside_it(nullius_env, tmp_path):
    path = bench(tmp_path)
    (path.parent / "data" / "secret").symlink_to("/etc/hostname")
    [line] = refused(nullius_env, path)
    assert line == f"{path}: $: expected every link in the definition's folder to stay inside it, found data/secret -> /etc/hostname"


def test_a_dataset_path_through_a_link_outside_the_folder(nullius_env, tmp_path):
    path = bench(tmp_path)
    problems = path.parent / "data" / "problems.jsonl"
    moved = tmp_path / "problems.jsonl"
    problems.rename(moved)
    problems.symlink_to(moved)
    lines = refused(nullius_env, path)
    assert f"{path}: $.datasets.test.path: expected a path inside the definition's folder ({path.parent}), found '{{here}}/data/problems.jsonl', which is {moved}" in lines


def test_a_dataset_file_whose_sha256_is_not_the_pin(nullius_env, tmp_path):
    path = bench(tmp_path)
    data = path.parent / "data" / "problems.jsonl"
    data.write_text(data.read_text() + "\n")
    [line] = refused(nullius_env, path)
    assert line.startswith(f"{path}: $.datasets.test.sha256: expected the sha256 of {data}, which is ")
    assert line.endswith(", found '295aefa02370f6fd3b25ecc9b470341bbd3ae8ef34a3d374821ee662656919de'")


def test_a_cached_dataset_file_whose_sha256_is_not_the_pin(nullius_env, tmp_path):
    def change(standard):
        standard["datasets"]["test"]["url"] = "https://example.org/problems.jsonl"
        del standard["datasets"]["test"]["path"]

    path = bench(tmp_path, change)
    pin = json.loads(path.read_text())["datasets"]["test"]["sha256"]
    cached = Path(nullius_env["XDG_DATA_HOME"]) / "nullius" / "standard" / "datasets" / "arith" / "test" / pin / "problems.jsonl"
    cached.parent.mkdir(parents=True)
    cached.write_text("not the file\n")
    [line] = refused(nullius_env, path)
    assert line.startswith(f"{path}: $.datasets.test.sha256: expected the sha256 of {cached}, which is ")


@pytest.mark.parametrize("url", ["file:///etc/hostname", "ftp://example.org/x.txt", "/etc/hostname"])
def test_a_dataset_url_that_is_not_http(nullius_env, tmp_path, url):
    def change(standard):
        standard["datasets"]["test"]["url"] = url
        del standard["datasets"]["test"]["path"]

    path = bench(tmp_path, change)
    [line] = refused(nullius_env, path)
    assert line == f"{path}: $.datasets.test.url: expected an http:// or https:// URL, found {url!r}"


@pytest.mark.parametrize("command", ["check", "list"])
def test_json_nested_too_deep(nullius_env, tmp_path, command):
    catalogue = tmp_path / "catalogue"
    folder = catalogue / "agents" / "deep"
    folder.mkdir(parents=True)
    path = folder / "agent.json"
    path.write_text('{"schema": "nullius.agent/v1", "x-deep": ' + "[" * 100_000 + "]" * 100_000 + "}")
    env = {**nullius_env, "NULLIUS_CATALOGUE": str(catalogue)}
    result = run_cli([command] if command == "list" else [command, str(path)], env)
    assert result.code == 2, result.output
    assert "Traceback" not in result.output and "RecursionError" not in result.output
    assert f"{path}: $ (line 1, column 141): expected JSON nested at most 100 deep, found deeper nesting" in result.stderr


@pytest.mark.parametrize("inner", ["../../etc/hostname", "/etc/hostname", "data/../../x.jsonl"])
def test_a_dataset_path_leaving_the_upstream(nullius_env, tmp_path, inner):
    def change(standard):
        standard["datasets"]["test"]["path"] = inner

    path = bench(tmp_path, change)
    [line] = refused(nullius_env, path)
    assert line == f"{path}: $.datasets.test.path: expected a path inside the upstream (relative, without '..') or {{here}}/..., found {inner!r}"


def test_a_run_refuses_a_folder_that_check_refuses(nullius_env, tmp_path):
    def change(standard):
        standard["driver"]["command"] = ["python3", "{here}/../driver.py"]

    path = bench(tmp_path, change)
    shutil.copy(path.parent / "driver.py", path.parent.parent / "driver.py")  # a driver that works, outside the folder
    env = {**nullius_env, "NULLIUS_CATALOGUE": str(tmp_path)}
    result = run_cli(["run", "arith", "oracle"], env)
    assert result.code == 2, result.output
    assert "Traceback" not in result.output
    assert result.stderr.splitlines()[-2:] == [
        "nullius: run refused: the benchmark's definition is invalid:",
        f"{path}: $.driver.command[1]: expected a path inside the definition's folder ({path.parent}), "
        f"found '{{here}}/../driver.py', which is {path.parent.parent / 'driver.py'}",
    ]
    assert not Path(env["NULLIUS_JOBS_DIR"]).exists()


def test_a_link_that_loops(nullius_env, tmp_path):
    path = bench(tmp_path)
    (path.parent / "data" / "loop").symlink_to("loop")
    [line] = refused(nullius_env, path)
    assert line == f"{path}: $: expected every link in the definition's folder to stay inside it, found data/loop -> loop"


def test_a_file_of_the_wrong_shape_still_gets_every_other_check_in_one_pass(nullius_env, tmp_path):
    """A wrong type no longer hides the rest: the folder, the ports, the entry's files and the present data, all said at once."""
    def change(standard):
        standard["limits"] = {"score_seconds": "x"}  # the model cannot be built
        standard["needs"] = ["agent.nope/v1"]
        standard["driver"]["command"] = ["python3", "{here}/../outside.py"]
        standard["datasets"]["test"]["sha256"] = "0" * 64

    path = bench(tmp_path, change)
    (path.parent / "benchmark.json").unlink()
    lines = refused(nullius_env, path)
    where = sorted(line.split(": ")[1] for line in lines)
    assert where == ["$", "$.datasets.test.sha256", "$.driver.command[1]", "$.limits.score_seconds", "$.needs[0]"], lines
    assert f"{path.parent / 'benchmark.json'}: $: expected a file here, found none" in lines
    assert any(line.startswith(f"{path}: $.datasets.test.sha256: expected the sha256 of {path.parent / 'data' / 'problems.jsonl'}") for line in lines)


def test_an_agent_of_the_wrong_shape_still_has_its_proven_ports_checked(nullius_env, tmp_path):
    path = write(tmp_path, {**GOOD_AGENT, "start": "not a list", "proven": {"agent.nope/v1": {"passed": "1/1"}}})
    lines = refused(nullius_env, path)
    assert sorted(line.split(": ")[1] for line in lines) == ['$.proven["agent.nope/v1"]', "$.start"], lines


def test_an_invalid_proofs_file_is_an_error_naming_it_never_a_fallback(nullius_env):
    """A proofs file beside a plugin's definition is read strictly: its entry is invalid, not proven by the shipped file alone."""
    proofs = Path(nullius_env["XDG_CONFIG_HOME"]) / "nullius" / "catalogue" / "proofs" / "agents" / "reference.json"
    proofs.parent.mkdir(parents=True)
    proofs.write_text(json.dumps({"schema": "nullius.proofs/v1", "kind": "agent", "key": "reference", "records": [
        {"version": None, "digest": "sha256:0", "definition": "d", "date": "2026-12-01", "proven": {"agent.task/v1": {"passed": 3}}}]}))
    line = f'{proofs}: $.records[0].proven["agent.task/v1"].passed: expected a string, found the integer 3'
    checked = run_cli(["check"], nullius_env, in_process=True)
    assert checked.code == 2 and line in checked.stderr.splitlines(), checked.output
    listed = run_cli(["list"], nullius_env, in_process=True)
    assert listed.code == 2 and line in listed.stderr and "Traceback" not in listed.stderr
    fit = run_cli(["fit", "gsm8k", "--json"], nullius_env, in_process=True)
    assert "reference" not in json.loads(fit.stdout)["fits"]
