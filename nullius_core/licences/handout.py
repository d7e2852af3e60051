"""How a unit's part (its agent, or the driver) gets its licences: values by name in memory, files as 0600 files under /dev/shm.

A licence file is written to /dev/shm/nullius-<run>/<part>/ (0700, the file
0600) and removed when the part ends (`Handout.remove`). A name that is not
set makes the unit "not run: needs NAME", no one's result.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

from nullius_core.contracts.licences import Handout, SecretFile
from nullius_core.definitions.benchmark import Secret
from nullius_core.licences.store import SecretStore

SHM = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())


class MissingSecrets(Exception):
    def __init__(self, names: list[str]):
        super().__init__("not run: needs " + ", ".join(names))
        self.names = names



def remove_run(run: str) -> None:
    """Whatever is left of a run's licence files (its parts remove their own as they end)."""
    shutil.rmtree(SHM / f"nullius-{run}", ignore_errors=True)


def hand_out(store: SecretStore, secrets: Iterable[Secret], part: str, run: str, allow_missing: bool = False) -> Handout:
    """The licences of `secrets` for one part; MissingSecrets names every one not set (unless allow_missing)."""
    wanted = list(secrets)
    missing = store.missing([s.name for s in wanted])
    if missing and not allow_missing:
        raise MissingSecrets(missing)
    handout = Handout()
    for secret in wanted:
        value = store.get(secret.name)
        if value is None:
            continue
        if secret.kind == "file":
            if handout.folder is None:
                base = SHM / f"nullius-{run}"
                base.mkdir(mode=0o700, parents=True, exist_ok=True)
                handout.folder = Path(tempfile.mkdtemp(prefix=f"{part}-", dir=base))
            target = handout.folder / secret.name
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(value)
            handout.files.append(SecretFile(secret=secret, host=target))
        else:
            handout.values[secret.name] = value.decode("utf-8", "replace")
            if secret.kind == "server":
                handout.servers.append(secret)
    return handout
