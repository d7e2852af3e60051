"""The `nullius` command, and `nullius standard ...`, the same commands under the standard's spelling.

Plugins may add commands (`nullius_register_commands`); the group looks them
up after its own options are parsed, so `-p no:NAME` applies to them too. A
built-in name is resolved without loading any plugin: `nullius paths`,
`view`, `merge`, `fake-model` never build a session.
"""

from __future__ import annotations

import importlib
import platform

import click

from nullius_core import __version__

# The built-in commands, imported when one is asked for: `nullius --version`
# and a command's own --help load no engine, no relay, no plugin.
BUILTIN: dict[str, tuple[str, str]] = {
    "list": ("nullius_core.cli.catalogue_commands", "list_"),
    "check": ("nullius_core.cli.catalogue_commands", "check"),
    "fit": ("nullius_core.cli.catalogue_commands", "fit_"),
    "new": ("nullius_core.cli.catalogue_commands", "new"),
    "use-bundled": ("nullius_core.cli.catalogue_commands", "use_bundled_"),
    "plugins": ("nullius_core.cli.plugin_commands", "plugins"),
    "paths": ("nullius_core.cli.plugin_commands", "paths"),
    "run": ("nullius_core.cli.run_commands", "run"),
    "view": ("nullius_core.cli.view_command", "view"),
    "prove": ("nullius_core.cli.run_commands", "prove_cmd"),
    "conform": ("nullius_core.cli.run_commands", "conform_cmd"),
    "fidelity": ("nullius_core.cli.fidelity_command", "fidelity_cmd"),
    "merge": ("nullius_core.cli.merge_command", "merge_cmd"),
    "score": ("nullius_core.cli.score_command", "score_cmd"),
    "replay": ("nullius_core.cli.replay_command", "replay_cmd"),
    "rescore": ("nullius_core.cli.replay_command", "rescore_cmd"),
    "prompt": ("nullius_core.cli.prompt_command", "prompt_cmd"),
    "data": ("nullius_core.cli.run_commands", "data_group"),
    "relay": ("nullius_core.cli.relay_command", "relay"),
    "fake-model": ("nullius_core.cli.fake_model_command", "fake_model"),
    "secrets": ("nullius_core.cli.secrets_command", "secrets_group"),
}


# The names no plugin command may take.
RESERVED = frozenset({*BUILTIN, "standard"})


def builtin(name: str) -> click.Command | None:
    """The built-in command of that name, imported now (None: no such built-in)."""
    where = BUILTIN.get(name)
    if where is None:
        return None
    return getattr(importlib.import_module(where[0]), where[1])


class NulliusGroup(click.Group):
    """Built-in commands first, then those plugins register."""

    def _plugin_commands(self, ctx: click.Context) -> dict[str, click.Command]:
        from nullius_core.cli.base import session_for

        # session_for has already set aside a plugin whose command takes a built-in's name.
        registry = session_for(ctx).commands
        return {r.name: r.item for r in registry.entries() if r.name not in RESERVED}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*BUILTIN, *self._plugin_commands(ctx)}) + ["standard"]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        # A built-in is found without a session, so a command that needs no
        # plugin loads none; a plugin taking a built-in's name is reported by
        # whichever command builds a session (base.session_for).
        found = self.commands.get(cmd_name) or builtin(cmd_name)
        return found if found is not None else self._plugin_commands(ctx).get(cmd_name)


class StandardGroup(NulliusGroup):
    """`nullius standard X` is `nullius X`."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [n for n in cli.list_commands(ctx) if n != "standard"]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name == "standard":
            return None
        return cli.get_command(ctx, cmd_name)


@click.group(cls=NulliusGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    __version__,
    "--version",
    prog_name="nullius",
    message=f"%(prog)s %(version)s (Python {platform.python_version()})",
)
@click.option(
    "-p",
    "plugin_options",
    multiple=True,
    metavar="NAME",
    help="no:NAME blocks a plugin; a module path loads that module as a plugin. Repeatable.",
)
@click.option("--strict-plugins", is_flag=True, help="A plugin that fails to load is an error, not a warning.")
@click.option(
    "--log-format",
    type=click.Choice(["console", "json"]),
    default="console",
    show_default=True,
    help="How log lines on stderr look.",
)
@click.option("-v", "--verbose", count=True, help="More log lines (-vv for debug).")
def cli(plugin_options: tuple[str, ...], strict_plugins: bool, log_format: str, verbose: int) -> None:
    """Nullius: run benchmarks against agents and capabilities, and prove every claim it prints."""


@cli.group("standard", cls=StandardGroup)
def standard() -> None:
    """The same commands, as the standard spells them (nullius standard list, ...)."""


def main() -> None:
    # Logging is configured before the session loads plugins, so a broken
    # plugin's warning is already in the chosen format.
    import sys

    if sys.argv[1:] != ["--version"]:  # the version alone needs neither (structlog costs a tenth of a second)
        from nullius_core.limits import raise_open_files
        from nullius_core.logs import configure_logging

        configure_logging(_peek_log_format(sys.argv[1:]), _peek_verbosity(sys.argv[1:]))
        raise_open_files()  # a run's relay holds two descriptors a stream; the soft limit is raised to the hard one
    cli(prog_name="nullius")


def _peek_log_format(argv: list[str]) -> str:
    for i, arg in enumerate(argv):
        if arg == "--log-format" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--log-format="):
            return arg.split("=", 1)[1]
    return "console"


def _peek_verbosity(argv: list[str]) -> int:
    count = 0
    for arg in argv:
        if arg == "--verbose":
            count += 1
        elif arg.startswith("-v") and set(arg[1:]) == {"v"}:
            count += len(arg) - 1
    return count
