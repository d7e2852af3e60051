"""What every command shares: the session, errors that exit 2 without a traceback, output."""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

# What a session needs (the plugin manager, the catalogue, the definitions,
# attrs) and rich are imported when used: `paths`, `view` and `merge` need
# neither, and a quarter of a second is most of their start.
if TYPE_CHECKING:
    from rich.console import Console

    from nullius_core.session import Session

F = TypeVar("F", bound=Callable[..., Any])

USAGE_ERROR = 2


class Refused(click.ClickException):
    """A refusal the user can act on: printed as one message, exit status 2."""

    exit_code = USAGE_ERROR

    def show(self, file: Any = None) -> None:
        click.echo(f"nullius: {self.format_message()}", err=True)


def session_for(ctx: click.Context) -> Session:
    """The session of this invocation, built once from the root's options."""
    from nullius_core.plugins.manager import PluginControl, PluginError
    from nullius_core.session import Session

    root = ctx.find_root()
    session: Session | None = root.meta.get("nullius.session")
    if session is None:
        params = root.params
        if "plugin_options" not in params:
            # --help is answered while the options are parsed, before they
            # are stored: read -p and --strict-plugins from the command line.
            params = peek_plugin_options(sys.argv[1:])
        control = PluginControl.from_env(
            p_options=tuple(params.get("plugin_options") or ()),
            strict=bool(params.get("strict_plugins")),
        )
        try:
            session = Session(control=control)
            set_aside_squatters(session)
        except PluginError as exc:
            raise Refused(str(exc)) from None
        root.meta["nullius.session"] = session
    return session


def set_aside_squatters(session: Session) -> None:
    """Mark failed each plugin whose command takes a built-in's name (the built-in stays).

    Done when the session is built, whichever command builds it, so that the
    plugin is reported even by a command that never looks a plugin command up.
    """
    from nullius_core.cli.main import RESERVED

    for registered in session.commands.entries():
        if registered.name in RESERVED:
            session.set_aside(registered.plugin, f"its command {registered.name!r} has a built-in command's name")


def peek_plugin_options(argv: list[str]) -> dict[str, Any]:
    """-p and --strict-plugins as the root group would parse them."""
    options: list[str] = []
    strict = False
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "-p" and i + 1 < len(argv):
            options.append(argv[i + 1])
            i += 1
        elif arg.startswith("-p") and len(arg) > 2:
            options.append(arg[2:])
        elif arg == "--strict-plugins":
            strict = True
        elif not arg.startswith("-"):
            break  # the subcommand: what follows is its own
        i += 1
    return {"plugin_options": options, "strict_plugins": strict}


def user_errors() -> tuple[type[Exception], ...]:
    """The errors a user causes (and can act on), as `refusals` turns them into exit status 2."""
    from nullius_core.catalogue.catalogue import CatalogueConflict
    from nullius_core.definitions import DefinitionError
    from nullius_core.plugins.manager import PluginError

    return (DefinitionError, CatalogueConflict, PluginError, LookupError)


def refusals(func: F) -> F:
    """Turn the errors a user causes into messages and exit status 2."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except click.ClickException:
            raise
        except Exception as exc:
            # The error classes are imported only now: a command that fails
            # in none of them never pays for their modules.
            from nullius_core.definitions import DefinitionError

            if isinstance(exc, DefinitionError):
                click.echo(exc.render(), err=True)
                sys.exit(USAGE_ERROR)
            if not isinstance(exc, user_errors()):
                raise
            message = exc.args[0] if isinstance(exc, LookupError) and exc.args else str(exc)
            raise Refused(str(message)) from None

    return wrapper  # type: ignore[return-value]


def json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")(func)


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def console() -> Console:
    from rich.console import Console  # only a command that prints rich output pays for rich

    # Piped output is read by people and tools alike: no wrapping at 80 columns (COLUMNS, when set, says how wide).
    columns = os.environ.get("COLUMNS", "")
    width = None if sys.stdout.isatty() else int(columns) if columns.isdigit() and int(columns) > 0 else 200
    return Console(soft_wrap=False, highlight=False, width=width)
