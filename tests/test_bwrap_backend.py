"""The bwrap backend: the Backend contract, and the kernel check that refuses a run naming what is missing."""

from __future__ import annotations

from nullius_core.testing.backend_contract import check_backend
from nullius_plugins.bwrap_backend import BwrapBackend


def test_the_bwrap_backend_keeps_the_contract(nullius_env, tmp_path):
    assert check_backend(BwrapBackend, tmp_path, nullius_env) == []
