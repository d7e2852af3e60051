"""One test per hook specification (the meta-test in test_meta.py demands `test_hook_<name>`)."""

from __future__ import annotations

import json

import click
import pytest

from nullius_core import hookimpl
from nullius_core.plugins import BackendSpec, ModelApiSpec, ProviderSpec, RegistrationConflict, RunnerSpec
from nullius_core.ports import Port


class Inline:
    """An inline plugin made of the given hook functions."""

    def __init__(self, **hooks):
        for name, func in hooks.items():
            setattr(self, name, hookimpl(func))


def test_hook_nullius_register_ports(nullius_session):
    def nullius_register_ports(registry):
        registry.add(Port(name="agent.inline/v1", contract="an inline port"))

    session = nullius_session(("inline", Inline(nullius_register_ports=nullius_register_ports)))
    assert session.ports.get("agent.inline/v1").contract == "an inline port"
    assert session.ports.by_plugin("inline") == ["agent.inline/v1"]
    tools = session.ports.get("agent.tools/v1")
    assert tools.kit_version == 2 and tools.basic == ["one-tool", "arguments"]
    assert set(tools.skills) == {"decoys", "chain", "retry"}
    assert session.ports.get("agent.browser/v1").kit is None
    assert {p.kit_version for p in session.ports if p.kit and p.name != "agent.tools/v1"} == {1}


def test_hook_nullius_register_ports_conflict_names_both(nullius_session):
    def nullius_register_ports(registry):
        registry.add(Port(name="agent.task/v1", contract="a second task port"))

    session = nullius_session(("dupe", Inline(nullius_register_ports=nullius_register_ports)))
    session.ports  # the conflict sets the second plugin aside
    info = session.info("dupe")
    assert info.status == "failed"
    assert "port 'agent.task/v1' is registered by plugin 'ports-v1' and by plugin 'dupe'" in info.error


def test_hook_nullius_register_catalogue(nullius_session, tmp_path):
    root = tmp_path / "shipped"
    agent = root / "agents" / "inline-agent"
    agent.mkdir(parents=True)
    (agent / "agent.json").write_text(
        json.dumps({"schema": "nullius.agent/v1", "upstream": {"npm": "x", "version": "1.0.0"}, "start": ["x"]})
    )
    single = tmp_path / "single" / "solo"
    single.mkdir(parents=True)
    (single / "capability.json").write_text(
        json.dumps({"schema": "nullius.capability/v1", "upstream": {"pypi": "y", "version": "1.0"}, "start": ["y"]})
    )

    def nullius_register_catalogue(registry):
        registry.add_root(root)
        registry.add_entry("capability", single)

    session = nullius_session(("inline", Inline(nullius_register_catalogue=nullius_register_catalogue)))
    entry = session.catalogue.get("agent", "inline-agent")
    assert entry.origin == "inline" and entry.file == agent / "agent.json"
    assert session.catalogue.get("capability", "solo").file == single / "capability.json"


def test_hook_nullius_register_backends(nullius_session):
    def nullius_register_backends(registry):
        registry.add(BackendSpec(name="inline", summary="inline backend", factory=lambda: "built"))

    session = nullius_session(("inline", Inline(nullius_register_backends=nullius_register_backends)))
    spec = session.backends.get("inline")
    assert spec.summary == "inline backend" and spec.factory() == "built"


def test_hook_nullius_register_model_apis(nullius_session):
    def nullius_register_model_apis(registry):
        registry.add(ModelApiSpec(name="inline-api", summary="s", paths=("/inline",), factory=lambda: None))

    session = nullius_session(("inline", Inline(nullius_register_model_apis=nullius_register_model_apis)))
    assert session.model_apis.get("inline-api").paths == ("/inline",)


def test_hook_nullius_register_providers(nullius_session):
    def nullius_register_providers(registry):
        registry.add(ProviderSpec(name="inline-p", summary="s", apis=("anthropic",), key_env="K", base_url="http://x", key_header="x-api-key"))

    session = nullius_session(("inline", Inline(nullius_register_providers=nullius_register_providers)))
    assert session.providers.get("inline-p").key_header == "x-api-key"


def test_hook_nullius_register_runners(nullius_session):
    def nullius_register_runners(registry):
        registry.add(RunnerSpec(name="jsonl", summary="s", kind="capability", factory=lambda: None))

    session = nullius_session(("inline", Inline(nullius_register_runners=nullius_register_runners)))
    assert session.runners.get("capability:jsonl").kind == "capability"


def test_hook_nullius_register_commands(nullius_session):
    @click.command("inline-cmd")
    def inline_cmd():
        click.echo("inline")

    def nullius_register_commands(registry):
        registry.add(inline_cmd)

    session = nullius_session(("inline", Inline(nullius_register_commands=nullius_register_commands)))
    assert session.commands.get("inline-cmd") is inline_cmd
    with pytest.raises(RegistrationConflict):
        session.commands.owner = "other"
        session.commands.add(inline_cmd)


def test_registrars_are_called_lazily_and_once(nullius_session):
    calls = []

    def nullius_register_backends(registry):
        calls.append(1)

    session = nullius_session(("inline", Inline(nullius_register_backends=nullius_register_backends)))
    assert calls == []
    session.backends
    session.backends
    assert calls == [1]


def test_unmarked_nullius_function_counts_as_an_implementation(nullius_session):
    class Unmarked:
        @staticmethod
        def nullius_register_ports(registry):
            registry.add(Port(name="agent.unmarked/v1", contract="c"))

    session = nullius_session(("unmarked", Unmarked()))
    assert "agent.unmarked/v1" in session.ports


def test_inline_plugins_are_checked_like_installed_ones(nullius_session):
    class Misspelt:
        @staticmethod
        def nullius_register_backend(registry):
            pass

    class WrongArgs:
        @hookimpl
        def nullius_register_ports(self, registry, extra):
            pass

    session = nullius_session(("misspelt", Misspelt()), ("wrong-args", WrongArgs()))
    assert "nullius_register_backend (did you mean nullius_register_backends?)" in session.info("misspelt").error
    assert session.info("wrong-args").status == "failed"
    assert "extra" in session.info("wrong-args").error


def test_a_plugin_command_cannot_take_a_builtin_name(nullius_env, tmp_path):
    from nullius_core.testing import run_cli

    (tmp_path / "squatter.py").write_text(
        "import click\n"
        "@click.command('list')\n"
        "def fake():\n"
        "    click.echo('not the real list')\n"
        "def nullius_register_commands(registry):\n"
        "    registry.add(fake)\n"
    )
    env = {**nullius_env, "PYTHONPATH": str(tmp_path)}
    result = run_cli(["-p", "squatter", "list", "--json"], env)
    assert result.code == 0 and "not the real list" not in result.stdout
    assert "has a built-in command's name" in result.stderr
    plugins = run_cli(["-p", "squatter", "plugins", "--json"], env)
    row = next(p for p in json.loads(plugins.stdout)["plugins"] if p["name"] == "squatter")
    assert row["status"] == "failed"


def test_hook_nullius_register_agent_protocols(nullius_session):
    from nullius_core.plugins import AgentProtocolSpec

    def nullius_register_agent_protocols(registry):
        registry.add(AgentProtocolSpec(name="a2a", summary="another protocol", factory=lambda: "protocol"))

    session = nullius_session(("inline", Inline(nullius_register_agent_protocols=nullius_register_agent_protocols)))
    assert session.agent_protocols.get("a2a").factory() == "protocol"
    assert session.agent_protocols.get("acp").summary.startswith("The Agent Client Protocol")
