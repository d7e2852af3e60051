"""`run_cli(..., in_process=True)`: the `nullius` command run in the test's own process.

A subprocess costs half a second or more of CPU for its interpreter, its
imports and its plugins, paid again by every call; in the test's process the
imports and the entry points are paid once. What a call sees is what the
subprocess would see: os.environ is exactly `env`, the working folder is
`cwd`, stdin is `input`, sys.argv is `nullius ARGS`, and logging is set up as
main() sets it up, writing to the captured stderr. Everything is put back
afterwards, and each call builds its own session (click makes a new root
context per call, and the session lives in it).

It is not a process: no signals, no process tree, no fresh module state, no
timeout, and a command's children write to the test's own descriptors. The
calls change process-wide state (os.environ, the working folder), so they are
never made from two threads at once.
"""

from __future__ import annotations

import contextlib
import os
import sys
import traceback
from collections.abc import Iterator, Mapping
from pathlib import Path

import click
from click import formatting
from click.testing import CliRunner

from nullius_core import logs


def run_in_process(args: list[str], env: Mapping[str, str], cwd: Path | None, input: str | None) -> tuple[int, str, str]:
    """Run `nullius ARGS` here: (exit status, stdout, stderr)."""
    from nullius_core.cli.main import _peek_log_format, _peek_verbosity, cli

    if env.get("PYTHONPATH", "") != os.environ.get("PYTHONPATH", ""):
        # The plugins it points at would not be found: this process's entry points were read at its start.
        raise ValueError("a PYTHONPATH of its own (plugins installed for a test) needs the subprocess: drop in_process=True")
    runner = CliRunner()
    with _environ(env), _cwd(cwd), _argv(["nullius", *args]), logs.kept():
        with runner.isolation(input=input) as (out, err, _mixed):
            formatting.FORCED_WIDTH = _help_width(env)  # the isolation's 80 is not a pipe's; it puts its own back
            # Inside the isolation, so that the log lines go to the captured stderr.
            logs.configure_logging(_peek_log_format(args), _peek_verbosity(args))
            code = _main(cli, args)
            sys.stdout.flush()
            sys.stderr.flush()
            return code, _text(out.getvalue()), _text(err.getvalue())


def _main(cli: click.Command, args: list[str]) -> int:
    """The group's main() as the interpreter would end it: its exit status, a traceback on stderr and 1 for an error."""
    try:
        cli.main(args=args, prog_name="nullius")
    except SystemExit as exc:
        if exc.code is None:
            return 0
        if isinstance(exc.code, int):
            return exc.code
        print(exc.code, file=sys.stderr)  # sys.exit("message"), as Python prints it
        return 1
    except Exception:  # noqa: BLE001 - a crash is the command's result, as in a subprocess
        traceback.print_exc()
        return 1
    return 0


def _help_width(env: Mapping[str, str]) -> int:
    """The width click gives --help with stdout a pipe: COLUMNS, else shutil's fallback of 80, at most 80, less 2."""
    columns = env.get("COLUMNS", "")
    return max(min(int(columns) if columns.isdigit() and int(columns) > 0 else 80, 80) - 2, 50)


def _text(data: bytes) -> str:
    # As subprocess.run(text=True) decodes the child's output: universal newlines.
    return data.decode(errors="replace").replace("\r\n", "\n").replace("\r", "\n")


@contextlib.contextmanager
def _environ(env: Mapping[str, str]) -> Iterator[None]:
    """os.environ exactly `env` for the block (nothing of the test's own left in it), then as it was."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def _cwd(cwd: Path | None) -> Iterator[None]:
    saved = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(saved)


@contextlib.contextmanager
def _argv(argv: list[str]) -> Iterator[None]:
    """sys.argv as the command's: `--help` reads -p from it before click stores the options."""
    saved = sys.argv
    sys.argv = argv
    try:
        yield
    finally:
        sys.argv = saved
