"""Where Nullius keeps things on this machine (`nullius paths` prints them all).

Each location may be moved by a variable: NULLIUS_CATALOGUE (the user
catalogue), STANDARD_DIR (installs, upstreams, drivers), STANDARD_DATA_DIR
(datasets), SECRETS_DIR (licences), NULLIUS_JOBS_DIR (jobs). The defaults
follow the XDG base directories.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import attrs


@attrs.frozen(kw_only=True)
class Paths:
    catalogue: Path
    standard_dir: Path
    data_dir: Path
    secrets_dir: Path
    jobs_dir: Path
    settings: Path
    prices: Path  # the user's price file, laid over the core's (relay/prices.py)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, cwd: Path | None = None) -> Paths:
        env = os.environ if env is None else env
        home = Path(env.get("HOME") or Path.home())
        config = Path(env.get("XDG_CONFIG_HOME") or home / ".config") / "nullius"
        data = Path(env.get("XDG_DATA_HOME") or home / ".local" / "share") / "nullius"
        standard_dir = Path(env.get("STANDARD_DIR") or data / "standard")
        return cls(
            catalogue=Path(env.get("NULLIUS_CATALOGUE") or config / "catalogue"),
            standard_dir=standard_dir,
            data_dir=Path(env.get("STANDARD_DATA_DIR") or standard_dir / "datasets"),
            secrets_dir=Path(env.get("SECRETS_DIR") or config / "secrets"),
            jobs_dir=Path(env.get("NULLIUS_JOBS_DIR") or (cwd or Path.cwd()) / "jobs"),
            settings=config / "settings.json",
            prices=config / "prices.json",
        )

    # What moves each place: the variable first, then what its default is made of.
    MOVED_BY = {
        "user catalogue": "NULLIUS_CATALOGUE (default: $XDG_CONFIG_HOME/nullius/catalogue, ~/.config/nullius/catalogue)",
        "STANDARD_DIR": "STANDARD_DIR (default: $XDG_DATA_HOME/nullius/standard, ~/.local/share/nullius/standard)",
        "STANDARD_DATA_DIR": "STANDARD_DATA_DIR (default: $STANDARD_DIR/datasets)",
        "SECRETS_DIR": "SECRETS_DIR (default: $XDG_CONFIG_HOME/nullius/secrets)",
        "jobs": "NULLIUS_JOBS_DIR, or a run's --jobs-dir (default: ./jobs, in the folder you run from)",
        "settings": "XDG_CONFIG_HOME (default: ~/.config/nullius/settings.json)",
        "prices": "XDG_CONFIG_HOME (default: ~/.config/nullius/prices.json)",
    }

    def as_dict(self) -> dict[str, str]:
        return {
            "user catalogue": str(self.catalogue),
            "STANDARD_DIR": str(self.standard_dir),
            "STANDARD_DATA_DIR": str(self.data_dir),
            "SECRETS_DIR": str(self.secrets_dir),
            "jobs": str(self.jobs_dir),
            "settings": str(self.settings),
            "prices": str(self.prices),
        }
