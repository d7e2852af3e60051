"""What a task's compose file may ask of this machine: nothing that reaches past the task's own containers.

A task set is someone else's. Its compose file, as compose itself reads it
(`config --format json`), is held to one policy before anything starts: no
privileged service, no host network, pid, IPC, UTS, user or cgroup namespace
(nor another container's), no devices, no added capabilities, no security
option that turns a confinement off, no bind mount, build context or secret
file from outside the task's folder, no build on the host's network and no
network the project did not make. Each problem names the file and the key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nullius_core import handed

# a namespace key: any value but these joins the host's, or another container's
NAMESPACES = {"network_mode": {"", "none", "bridge", "default"}, "pid": {""}, "ipc": {"", "private", "shareable", "none"},
              "uts": {""}, "userns_mode": {""}, "cgroup": {"", "private"}}
NOT_EMPTY = ("devices", "device_cgroup_rules", "cap_add")
UNCONFINED = ("unconfined", "disable", "systempaths")
MOUNTS = {"volume", "tmpfs"}  # a bind mount is checked for its source; any other type is refused


def problems(config: dict[str, Any], folder: Path, file: Path, main: str) -> list[str]:
    """Every way the normalized config reaches past the task's folder and containers, one line each."""
    found: list[str] = [] if _inside(str(file), folder) else [f"{file}: a compose file outside the task's folder (a link out)"]
    for name, spec in (config.get("services") or {}).items():
        if name != main and isinstance(spec, dict):  # main is the box Nullius makes: only its environment is read
            found += [f"{file}: services.{name}.{problem}" for problem in _service(spec, folder)]
    for name, spec in (config.get("secrets") or {}).items():
        source = (spec or {}).get("file")
        if source is not None and not _inside(source, folder):
            found.append(f"{file}: secrets.{name}.file: {source} is outside the task's folder")
    for name, spec in (config.get("networks") or {}).items():
        if (spec or {}).get("external") or (spec or {}).get("driver") in ("host", "macvlan", "ipvlan"):
            found.append(f"{file}: networks.{name}: a network the project does not make (external, or the host's)")
    return found


def _service(spec: dict[str, Any], folder: Path) -> list[str]:
    found = []
    if spec.get("privileged"):
        found.append("privileged: true (every device and capability of this machine)")
    for key, allowed in NAMESPACES.items():
        value = str(spec.get(key) or "")
        if value not in allowed and not value.startswith("service:"):  # service:NAME shares with the project's own
            found.append(f"{key}: {value} (the host's, or a container's outside the project)")
    found += [f"{key}: {spec[key]} (expected none)" for key in NOT_EMPTY if spec.get(key)]
    found += [f"security_opt: {opt} (turns a confinement off)" for opt in spec.get("security_opt") or []
              if any(word in str(opt) for word in UNCONFINED)]
    for mount in spec.get("volumes") or []:
        kind, source = mount.get("type"), mount.get("source")
        if kind == "bind" and not _inside(str(source), folder):
            found.append(f"volumes: {source}:{mount.get('target')} (a bind mount from outside the task's folder)")
        elif kind not in MOUNTS and kind != "bind":
            found.append(f"volumes: a {kind} mount (expected a volume, a tmpfs or a bind mount inside the task's folder)")
    build = spec.get("build") or {}
    if build:
        if not _inside(str(build.get("context") or ""), folder):
            found.append(f"build.context: {build.get('context')} (outside the task's folder)")
        if str(build.get("network") or "") == "host":
            found.append("build.network: host (a build on this machine's network)")
        if build.get("privileged"):
            found.append("build.privileged: true")
        found += [f"build.additional_contexts.{name}: {path} (outside the task's folder)"
                  for name, path in (build.get("additional_contexts") or {}).items()
                  if "://" not in str(path) and not str(path).startswith(("docker-image:", "service:"))
                  and not _inside(str(path), folder)]
    return found


def _inside(path: str, folder: Path) -> bool:
    try:
        return bool(path) and bool(handed.within(folder, Path(path)))
    except handed.Refused:
        return False
