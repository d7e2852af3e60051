"""An agent's licences as a backend passes them on: values by name, 0600 files, licence servers."""

from __future__ import annotations

import shutil
from pathlib import Path

import attrs

from nullius_core.definitions.benchmark import Secret


@attrs.frozen(kw_only=True)
class SecretFile:
    secret: Secret
    host: Path  # the 0600 copy on this machine; a container mounts it at secret.path


@attrs.define(kw_only=True)
class Handout:
    values: dict[str, str] = attrs.field(factory=dict)  # kind value and server: the variable `name`
    files: list[SecretFile] = attrs.field(factory=list)
    servers: list[Secret] = attrs.field(factory=list)
    folder: Path | None = None

    def env(self) -> dict[str, str]:
        """What the part's process gets: each value by its name, each file's path in its `env` variable."""
        out = dict(self.values)
        for item in self.files:
            if item.secret.env:
                out[item.secret.env] = str(item.host)
        return out

    def remove(self) -> None:
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None
