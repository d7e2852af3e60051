"""The Backend contract (nullius_core.testing.backend_contract) holds the local backend to it, and catches a backend that breaks it."""

from __future__ import annotations

import tempfile

import attrs

from nullius_core.contracts.backend import RelayRoom, UnitPlace
from nullius_core.testing.backend_contract import check_backend
from nullius_plugins.local_backend import LocalBackend
from nullius_plugins.local_backend.process import LocalProcess


def test_the_local_backend_keeps_the_contract(nullius_env, tmp_path):
    assert check_backend(LocalBackend, tmp_path, nullius_env) == []


class NoGit(LocalBackend):
    async def prepare_unit(self, workspace, home):  # no repository, and the agent's group left alone
        workspace.mkdir(parents=True, exist_ok=True)
        home.mkdir(parents=True, exist_ok=True)
        return UnitPlace(workspace=workspace, home=home)


class Elsewhere(LocalBackend):
    async def use_environment(self, place, environment, participant, handout):
        (place.workspace.parent / "elsewhere").mkdir()
        return UnitPlace(workspace=place.workspace.parent / "elsewhere", home=place.home)


class Astray(LocalBackend):
    async def open_room(self, relay, unit, record, place, route):  # the agent works in a folder of its own, not the unit's
        async def start(launch):
            return await LocalProcess.start(attrs.evolve(launch, cwd=tempfile.mkdtemp()))

        return RelayRoom(relay, unit, record, route, start)


def test_the_contract_names_what_a_backend_breaks(nullius_env, tmp_path):
    assert check_backend(Astray, tmp_path / "c", nullius_env) == ["what the agent wrote in its working folder is not in the unit's workspace here"]
    assert check_backend(NoGit, tmp_path / "a", nullius_env) == ["prepare_unit() did not make the workspace (a git repository) and HOME"]
    broken = check_backend(Elsewhere, tmp_path / "b", nullius_env)
    assert "use_environment(None) moved the unit's workspace or HOME" in broken
    assert "what the agent wrote in its working folder is not in the unit's workspace here" not in broken  # it is, elsewhere
    assert len(broken) == 1
