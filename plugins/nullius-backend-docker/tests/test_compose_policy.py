"""A task's compose file is someone else's: what it asks of this machine is refused before anything starts.

Each hostile file is read by compose itself (the packaged docker compose
v2's `config`), as a run reads it; the refusal names the file and the key,
and nothing is started (the compose log holds no `up`). The two example
tasks with services pass the same policy unchanged.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from nullius_backend_docker.compose import Sidecars
from nullius_core.contracts.own_image import NotRun

REPO = Path(__file__).resolve().parents[3]

HOSTILE = {
    "root-mounted": ("volumes: ['/:/host']", "services.evil.volumes: /:/host (a bind mount from outside the task's folder)"),
    "host-network": ("network_mode: host", "services.evil.network_mode: host"),
    "privileged": ("privileged: true", "services.evil.privileged: true"),
    "host-pid": ("pid: host", "services.evil.pid: host"),
    "host-ipc": ("ipc: host", "services.evil.ipc: host"),
    "capabilities": ("cap_add: [SYS_ADMIN]", "services.evil.cap_add: ['SYS_ADMIN']"),
    "devices": ("devices: ['/dev/null:/dev/x']", "services.evil.devices:"),
    "unconfined": ("security_opt: ['seccomp:unconfined']", "services.evil.security_opt: seccomp:unconfined"),
    "a-link-out": ("volumes: ['./out:/data']", "services.evil.volumes:"),
    "build-outside": ("build: {context: /etc}", "services.evil.build.context: /etc"),
    "build-on-host": ("build: {context: ., network: host}", "services.evil.build.network: host"),
}


def _sidecars(task: Path, log: Path) -> Sidecars:
    return Sidecars("policy", task / "environment" / "docker-compose.yaml", {}, "nullius/base:latest", log, task)


def _task(root: Path, name: str, service: str, extra: str = "") -> Path:
    task = root / name
    (task / "environment").mkdir(parents=True)
    (task / "environment" / "Dockerfile").write_text("FROM nullius/base\n")
    (task / "environment" / "out").symlink_to("/")  # used by a-link-out: inside by name, the machine's / once followed
    (task / "environment" / "docker-compose.yaml").write_text(
        f"services:\n  evil:\n    image: nullius/base\n    {service}\n{extra}")
    return task


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_compose_file_asking_for_the_host_is_refused_naming_the_file_and_the_key(name, tmp_path):
    service, said = HOSTILE[name]
    task = _task(tmp_path, name, service)
    log = tmp_path / "compose.log"
    with pytest.raises(NotRun) as refused:
        asyncio.run(_sidecars(task, log).up())
    message = str(refused.value)
    assert message.startswith("not run: the task's compose file asks for more than its own containers: ")
    assert f"{task / 'environment' / 'docker-compose.yaml'}: {said}" in message, message
    assert "docker compose up" not in log.read_text()  # nothing started


def test_a_secret_file_or_a_network_from_outside_is_refused(tmp_path):
    extra = "secrets:\n  s:\n    file: /etc/shadow\nnetworks:\n  default:\n    external: true\n    name: bridge\n"
    task = _task(tmp_path, "outside", "secrets: [s]", extra)
    with pytest.raises(NotRun) as refused:
        asyncio.run(_sidecars(task, tmp_path / "compose.log").up())
    assert "secrets.s.file: /etc/shadow is outside the task's folder" in str(refused.value)
    assert "networks.default: a network the project does not make" in str(refused.value)


@pytest.mark.parametrize("example", ["compose-inventory-report", "offline-docs-build"])
def test_the_example_tasks_with_services_pass_the_policy(example, tmp_path):
    task = REPO / "examples" / "harbor-tasks" / example
    config = asyncio.run(_sidecars(task, tmp_path / "compose.log").config())  # read, and let through
    assert "main" in config["services"] and ("inventory-api" in config["services"]) == (example == "compose-inventory-report")
