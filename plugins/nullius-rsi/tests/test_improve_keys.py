"""The key kept out of the kernel: the kernel's environment holds no secret, a rollout's `nullius run` gets it from the desk."""

from __future__ import annotations

import os
import subprocess
import sys

from nullius_rsi.keys import SOCKET_VAR, TOKEN_VAR, KeyDesk, asked, run_env

KEY = "sk-desk-test-0123456789"


def test_the_kernel_runs_without_the_key_and_a_rollout_asks_for_it(tmp_path):
    desk = KeyDesk({"OPENAI_API_KEY": KEY, "PATH": os.environ["PATH"], "HOME": str(tmp_path)}, tmp_path)
    try:
        kernel = desk.kernel_env()
        assert "OPENAI_API_KEY" not in kernel and KEY not in "".join(kernel.values())
        assert kernel["PATH"] == os.environ["PATH"] and oct(os.stat(kernel[SOCKET_VAR]).st_mode & 0o777) == "0o600"
        # a process the kernel starts (as it starts a rollout) asks the desk, and gets the key for its own `nullius run`
        code = "import json, os; from nullius_rsi.keys import run_env; print(json.dumps(run_env(os.environ)))"
        shown = subprocess.run([sys.executable, "-c", code], env=kernel, capture_output=True, text=True, timeout=120)
        assert shown.returncode == 0, shown.stderr
        got = __import__("json").loads(shown.stdout)
        assert got["OPENAI_API_KEY"] == KEY and SOCKET_VAR not in got and TOKEN_VAR not in got
        # a wrong ticket gets nothing
        assert asked({**kernel, TOKEN_VAR: "not-the-ticket"}) == {}
    finally:
        desk.close()
    assert not (tmp_path / "keys.sock").exists()


def test_without_a_desk_the_environment_is_as_it_was():
    assert run_env({"A": "1"}) == {"A": "1"}
