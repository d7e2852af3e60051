"""Helpers for testing Nullius and its plugins.

``nullius_core.testing.pytest_plugin`` is registered as a pytest plugin
(entry point ``pytest11``), so a plugin author's tests get its fixtures by
installing ``nullius``:

* ``nullius_env``: an isolated home (user catalogue, STANDARD_DIR, secrets,
  jobs under the test's tmp_path) and the variables that point at it;
* ``nullius_session``: a factory of sessions over that home, with inline
  plugins registered beside the installed ones;
* ``nullius_cli``: runs the real ``nullius`` command in a subprocess with that
  environment (``in_process=True``: in the test's own process, for a test of
  a command's output alone; see ``run_cli``).
"""

from nullius_core.testing.helpers import CliResult, files_holding, isolated_env, make_session, processes_under, run_cli

__all__ = ["CliResult", "files_holding", "isolated_env", "make_session", "processes_under", "run_cli"]
