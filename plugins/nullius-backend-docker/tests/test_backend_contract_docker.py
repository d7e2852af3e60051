"""The docker backend keeps the same Backend contract the local one does (nullius_core.testing.backend_contract)."""

from __future__ import annotations

from docker_world import docker_or_fail

from nullius_core.testing.backend_contract import check_backend


def test_the_docker_backend_keeps_the_contract(world, tmp_path):
    docker_or_fail()
    env, _, _ = world
    from nullius_backend_docker.backend import DockerBackend

    assert check_backend(DockerBackend, tmp_path, env) == []
