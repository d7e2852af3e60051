"""The command's start: what a built-in command loads, and the in-process runner the tests use."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from nullius_core.testing import run_cli

# Prints, after the command ran, which of the costly parts it imported.
LOADED = (
    "import sys\n"
    "from nullius_core.cli.main import main\n"
    "sys.argv = ['nullius', *sys.argv[1:]]\n"
    "try:\n"
    "    main()\n"
    "except SystemExit:\n"
    "    pass\n"
    "names = ('nullius_core.session', 'nullius_plugins', 'structlog', 'rich', 'pluggy')\n"
    "print(sorted(n for n in names if n in sys.modules), file=sys.stderr)\n"
)


@pytest.mark.parametrize("args", [["paths", "--json"], ["view", "no-such-job"], ["merge", "a", "b", "-o", "c"], ["--version"]])
def test_a_command_that_needs_no_plugin_loads_none_nor_structlog_nor_rich(nullius_env, tmp_path, args):
    result = subprocess.run([sys.executable, "-c", LOADED, *args], env=nullius_env, cwd=tmp_path, capture_output=True, text=True)
    assert result.stderr.splitlines()[-1] == "[]", result.stderr


def test_in_process_gives_what_the_subprocess_gives_and_puts_everything_back(nullius_env, tmp_path):
    environ, cwd = dict(os.environ), os.getcwd()
    for args in (["paths", "--json"], ["--help"], ["no-such-command"], ["-p", "no_such_module_x", "--log-format", "json", "plugins", "--json"]):
        inside, outside = run_cli(args, nullius_env, cwd=tmp_path, in_process=True), run_cli(args, nullius_env, cwd=tmp_path)
        assert (inside.code, inside.stdout) == (outside.code, outside.stdout), args
        assert [json.loads(line)["event"] for line in inside.stderr.splitlines() if line.startswith("{")] == \
            [json.loads(line)["event"] for line in outside.stderr.splitlines() if line.startswith("{")]
    assert dict(os.environ) == environ and os.getcwd() == cwd


def test_in_process_sees_exactly_its_env_and_refuses_a_pythonpath_of_its_own(nullius_env, tmp_path):
    env = {**nullius_env, "STANDARD_DIR": str(tmp_path / "std")}
    env.pop("PATH", None)
    described = json.loads(run_cli(["paths", "--json"], env, in_process=True).stdout)
    assert described["STANDARD_DIR"]["path"] == str(tmp_path / "std")
    with pytest.raises(ValueError, match="PYTHONPATH"):
        run_cli(["paths"], {**nullius_env, "PYTHONPATH": str(tmp_path)}, in_process=True)
