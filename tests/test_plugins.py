"""Plugin discovery through real entry points, the user's controls, failures, conflicts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import with_path

from nullius_core.testing import run_cli


def plugins_json(env):
    result = run_cli(["plugins", "--json"], env)
    assert result.code == 0, result.output
    return {p["name"]: p for p in json.loads(result.stdout)["plugins"]}, result


def test_bundled_plugins_are_listed_with_versions(nullius_env):
    found, _ = plugins_json(nullius_env)
    ports = found["ports-v1"]
    assert ports["distribution"] == "nullius-core"
    assert ports["version"] == "0.1.0"
    assert ports["status"] == "loaded"
    assert ports["hooks"] == ["nullius_register_ports"]
    assert "agent.tools/v1" in ports["registered"]["ports"]


def test_installed_plugin_is_found_through_its_entry_point(env_main):
    found, _ = plugins_json(env_main)
    fixture = found["fixture"]
    assert (fixture["distribution"], fixture["version"], fixture["status"]) == ("nullius-fixture-plugin", "1.2.3", "loaded")
    assert fixture["module"] == "nullius_fixture_plugin"
    registered = fixture["registered"]
    assert registered["backends"] == ["fixture-backend"]
    assert registered["providers"] == ["fixture-provider"]
    assert registered["commands"] == ["fixture-hello"]


def test_plugin_failing_at_import_is_named_and_the_rest_load(env_main):
    found, result = plugins_json(env_main)
    broken = found["fixture-broken"]
    assert broken["status"] == "failed"
    assert broken["distribution"] == "nullius-fixture-broken"
    assert "RuntimeError: the fixture plugin fails at import, on purpose" in broken["error"]
    assert found["fixture"]["status"] == "loaded"
    warnings = [line for line in result.stderr.splitlines() if "fixture-broken" in line]
    assert len(warnings) == 1 and "warning" in warnings[0]
    assert "Traceback" not in result.stderr


def test_strict_plugins_makes_a_failure_fatal(env_main):
    result = run_cli(["--strict-plugins", "list"], env_main)
    assert result.code == 2
    assert "nullius-fixture-broken" in result.stderr and "fails at import" in result.stderr
    assert "Traceback" not in result.stderr


def test_misspelt_hook_is_reported_with_a_suggestion(env_main):
    found, _ = plugins_json(env_main)
    misspelt = found["fixture-misspelt"]
    assert misspelt["status"] == "failed"
    assert "nullius_register_port (did you mean nullius_register_ports?)" in misspelt["error"]


def test_registration_failure_drops_what_the_plugin_registered(env_main):
    found, _ = plugins_json(env_main)
    bad = found["fixture-badregister"]
    assert bad["status"] == "failed"
    assert "ValueError: the fixture registrar fails, on purpose" in bad["error"]
    assert "ports" not in bad["registered"]
    result = run_cli(["fit", "fixture-tools", "--json"], env_main)
    assert result.code == 0, result.output


def test_blocklist_by_option_and_variable(env_main):
    found, _ = plugins_json({**env_main})
    assert found["fixture"]["status"] == "loaded"
    result = run_cli(["-p", "no:fixture", "plugins", "--json"], env_main)
    rows = {p["name"]: p for p in json.loads(result.stdout)["plugins"]}
    assert rows["fixture"]["status"] == "blocked"
    found, _ = plugins_json({**env_main, "NULLIUS_DISABLE_PLUGINS": "nullius-fixture-plugin,fixture-broken"})
    assert found["fixture"]["status"] == "blocked"
    assert found["fixture-broken"]["status"] == "blocked"
    assert found["ports-v1"]["status"] == "loaded"


def test_a_blocked_bundled_plugin_takes_its_ports_away(env_good):
    found, _ = plugins_json({**env_good, "NULLIUS_DISABLE_PLUGINS": "ports-v1"})
    assert found["ports-v1"]["status"] == "blocked"
    result = run_cli(["-p", "no:ports-v1", "check"], env_good)
    assert result.code == 2
    assert "$.needs[0]: expected a registered port (agent.fixture/v1), found 'agent.task/v1'" in result.stderr


def test_allowlist_and_autoload_switch(env_main):
    found, _ = plugins_json({**env_main, "NULLIUS_PLUGINS": "fixture"})
    assert found["fixture"]["status"] == "loaded"
    assert found["fixture-broken"]["status"] == "not allowed"
    assert found["ports-v1"]["status"] == "loaded"  # bundled plugins are not third-party
    found, _ = plugins_json({**env_main, "NULLIUS_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert found["fixture"]["status"] == "not autoloaded"
    assert found["ports-v1"]["status"] == "loaded"
    found, _ = plugins_json({**env_main, "NULLIUS_DISABLE_PLUGIN_AUTOLOAD": "1", "NULLIUS_PLUGINS": "fixture"})
    assert found["fixture"]["status"] == "loaded"


def test_p_loads_a_module_as_a_plugin(env_good, tmp_path):
    (tmp_path / "adhoc_plugin.py").write_text(
        "from nullius_core.ports import Port\n"
        "def nullius_register_ports(registry):\n"
        "    registry.add(Port(name='agent.adhoc/v1', contract='from -p'))\n"
    )
    env = with_path(env_good, tmp_path)
    result = run_cli(["-p", "adhoc_plugin", "plugins", "--json"], env)
    rows = {p["name"]: p for p in json.loads(result.stdout)["plugins"]}
    assert rows["adhoc_plugin"]["registered"] == {"ports": ["agent.adhoc/v1"]}


def test_two_plugins_with_one_benchmark_key_conflict(env_good, installed):
    env = with_path(env_good, installed["conflict"])
    result = run_cli(["list"], env)
    assert result.code == 2
    message = result.stderr
    assert "benchmark 'fixture-tools'" in message
    assert "nullius-fixture-plugin 1.2.3" in message and "nullius-fixture-conflict 2.0.0" in message
    assert "Traceback" not in message


def test_the_user_catalogue_settles_a_conflict(env_good, installed, nullius_env, tmp_path):
    env = with_path(env_good, installed["conflict"])
    source = installed["good"] / "nullius_fixture_plugin" / "catalogue" / "benchmarks" / "fixture-tools"
    user = Path(nullius_env["XDG_CONFIG_HOME"]) / "nullius" / "catalogue" / "benchmarks" / "fixture-tools"
    shutil.copytree(source, user)
    result = run_cli(["list", "--json"], env)
    assert result.code == 0, result.output
    row = next(b for b in json.loads(result.stdout)["benchmarks"] if b["ref"] == "fixture-tools")
    assert row["source"] == "user catalogue"


def test_an_invalid_user_entry_is_an_error_not_a_fallback(env_good, nullius_env):
    user = Path(nullius_env["XDG_CONFIG_HOME"]) / "nullius" / "catalogue" / "agents" / "fixture-proven"
    user.mkdir(parents=True)
    (user / "agent.json").write_text('{"schema": "nullius.agent/v1", "start": "oops"}')
    result = run_cli(["fit", "fixture-tools"], env_good)
    assert "fixture-proven" not in result.stdout.split("Cannot run it:")[0]
    assert "fixture-proven: invalid definition" in result.stdout
    listed = run_cli(["list"], env_good)
    assert listed.code == 2
    assert f"{user / 'agent.json'}: $.start: expected a list of strings" in listed.stderr


def test_plugin_command_runs_under_both_spellings(env_good):
    assert run_cli(["fixture-hello", "ann"], env_good).stdout.strip() == "hello ann, from the fixture plugin"
    assert run_cli(["standard", "fixture-hello"], env_good).stdout.strip() == "hello world, from the fixture plugin"
    assert "fixture-hello" in run_cli(["--help"], env_good).stdout
