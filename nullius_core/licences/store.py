"""Where a benchmark's licences are kept: SECRETS_DIR/<benchmark>/<NAME>, 0700 and 0600, and an index without values.

The index (`index.json`) says when each name was set and when it expires;
never a value. Values are read only when a unit starts, and handed on in
memory (or, for a licence file, as a 0600 file under /dev/shm removed when
the part ends): never into a build, a request, a log or a recorded config.
"""

from __future__ import annotations

import json
import os
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from nullius_core.definitions.benchmark import ResolvedBenchmark, Secret

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# A run's licences handed to this process in memory (`nullius run --licences-stdin`, as a run on a host gets them):
# while set, a store reads these alone, never SECRETS_DIR's files.
_handed: dict[str, bytes] | None = None


def hand_in(values: dict[str, bytes]) -> None:
    """This process's licences, in memory: every store answers from them alone (a name not among them is not set)."""
    global _handed
    for name in values:
        if not NAME.match(name):
            raise ValueError(f"not a secret's name: {name!r} (letters, digits and _, not starting with a digit)")
    _handed = dict(values)


def declared_secrets(bench: ResolvedBenchmark) -> dict[str, Secret]:
    """Every name the benchmark's environments ask for (one name, one kind: `nullius check` holds them to it)."""
    out: dict[str, Secret] = {}
    for environment in (bench.environments or {}).values():
        for secret in environment.needs_secrets or []:
            out.setdefault(secret.name, secret)
    return out


class SecretStore:
    def __init__(self, root: Path, benchmark: str):
        if not re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]*$", benchmark):
            raise ValueError(f"not a benchmark key: {benchmark!r}")
        self.root = root
        self.folder = root / benchmark

    def _ensure(self) -> None:
        for folder in (self.root, self.folder):
            folder.mkdir(parents=True, exist_ok=True)
            os.chmod(folder, 0o700)

    def _path(self, name: str) -> Path:
        if not NAME.match(name):
            raise ValueError(f"not a secret's name: {name!r} (letters, digits and _, not starting with a digit)")
        return self.folder / name

    def index(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads((self.folder / "index.json").read_text())
        except (FileNotFoundError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write_index(self, index: dict[str, dict[str, Any]]) -> None:
        target = self.folder / "index.json"
        tmp = target.with_suffix(".tmp")
        tmp.write_text(json.dumps(index, indent=2, sort_keys=True) + "\n")
        os.chmod(tmp, 0o600)
        os.replace(tmp, target)

    def set(self, name: str, value: bytes, expires: str | None = None) -> None:
        path = self._path(name)
        self._ensure()
        fd = os.open(path.with_suffix(".tmp"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(value)
        os.replace(path.with_suffix(".tmp"), path)
        index = self.index()
        index[name] = {"set_at": datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"), "expires": expires}
        self._write_index(index)

    def unset(self, name: str) -> bool:
        path = self._path(name)
        index = self.index()
        existed = path.exists()
        path.unlink(missing_ok=True)
        if index.pop(name, None) is not None:
            self._write_index(index)
        return existed

    def expired(self, name: str) -> bool:
        """Whether NAME was set with an expiry that has passed (it then counts as not set)."""
        expires = (self.index().get(name) or {}).get("expires")
        return bool(expires) and expires < datetime.now(timezone.utc).strftime("%Y-%m-%d")

    def get(self, name: str) -> bytes | None:
        """The value, or None when it is not set or has expired (handed in memory: as handed)."""
        path = self._path(name)
        if _handed is not None:
            return _handed.get(name)
        if self.expired(name):
            return None
        try:
            return path.read_bytes()
        except FileNotFoundError:
            return None

    def missing(self, names: list[str]) -> list[str]:
        return [n for n in names if self.get(n) is None]
