"""A unit's environment as its backend is handed it: the image it runs in, and where that image is made from."""

from __future__ import annotations

from pathlib import Path

import attrs

from nullius_core.contracts.own_image import OwnUnit
from nullius_core.definitions.benchmark import Environment


@attrs.frozen(kw_only=True)
class UnitEnvironment:
    name: str
    definition: Environment
    benchmark: str  # the benchmark's key: its images are nullius/env-<benchmark>-<name>:<hash>
    folder: Path  # the benchmark's folder: the Dockerfile and its files are read from here
    log: Path  # the job's .work/env-<name>.log: the build's output
    own: OwnUnit | None = None  # an own image's: what setup asked for (image, workdir, verify)
