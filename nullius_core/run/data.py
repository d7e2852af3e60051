"""Datasets: pinned by sha256, kept in a cache under STANDARD_DATA_DIR, handed to the driver by path.

A file whose digest differs from the pin is refused, naming both digests. A
machine that cannot fetch a dataset seeds the cache from a local file
(`nullius data add BENCH[/DATASET] FILE`); a fetch that cannot happen says
exactly which file to seed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import urllib.request
from collections.abc import Callable
from pathlib import Path

from nullius_core.definitions import Dataset
from nullius_core.paths import Paths
from nullius_core.run.progress import Progress, Timer


class DataError(Exception):
    """A dataset cannot be had, or its file is not the pinned one."""


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def file_name(dataset: Dataset) -> str:
    source = dataset.path or dataset.url or "data"
    return source.rstrip("/").rsplit("/", 1)[-1] or "data"


def cached_path(paths: Paths, bench: str, name: str, dataset: Dataset) -> Path:
    assert dataset.sha256 is not None
    return paths.data_dir / bench / name / dataset.sha256 / file_name(dataset)


def _check(path: Path, dataset: Dataset, what: str) -> None:
    found = sha256_file(path)
    if found != dataset.sha256:
        raise DataError(f"{what}: its sha256 is {found}, but the pin is {dataset.sha256}; refused")


def _store(source: Path, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".partial-", dir=target.parent)
    os.close(fd)
    shutil.copyfile(source, tmp)
    os.replace(tmp, target)
    return target


def add(paths: Paths, bench: str, name: str, dataset: Dataset, file: Path) -> Path:
    """Seed the cache with `file`, checked against the pin."""
    if dataset.sha256 is None:
        raise DataError(f"dataset {bench}/{name} has no file to seed: it pins no sha256")
    if not file.is_file():
        raise DataError(f"{file}: no such file")
    _check(file, dataset, str(file))
    return _store(file, cached_path(paths, bench, name, dataset))


def seed_hint(bench: str, name: str, dataset: Dataset) -> str:
    return f"seed it with: nullius data add {bench}/{name} FILE (a file whose sha256 is {dataset.sha256})"


def resolve(
    paths: Paths,
    bench: str,
    name: str,
    dataset: Dataset,
    here: Path,
    progress: Progress,
    upstream_dir: Callable[[], Path] | None = None,
    install_python: Path | None = None,
) -> Path | None:
    """The dataset's file, from the cache or fetched into it; None for a dataset with no file."""
    if dataset.path is None and dataset.url is None:
        return None
    if dataset.path is not None and dataset.path.startswith("{here}/"):
        local = here / dataset.path[len("{here}/"):]
        if not local.is_file():
            raise DataError(f"dataset {bench}/{name}: {local} is missing from the benchmark's folder")
        _check(local, dataset, str(local))
        return local
    target = cached_path(paths, bench, name, dataset)
    if target.exists():
        progress.stage("install", dataset=f"{bench}/{name}", state="cached")
        return target
    progress.stage("install", dataset=f"{bench}/{name}", state="start")
    timer = Timer()
    try:
        source = _fetch(bench, name, dataset, upstream_dir, install_python, target)
        _check(source, dataset, f"dataset {bench}/{name} ({source})")
        if source != target:
            _store(source, target)
    except DataError:
        progress.stage("install", dataset=f"{bench}/{name}", state="failed", seconds=timer.seconds)
        raise
    progress.stage("install", dataset=f"{bench}/{name}", state="done", seconds=timer.seconds)
    return target


def _fetch(
    bench: str,
    name: str,
    dataset: Dataset,
    upstream_dir: Callable[[], Path] | None,
    install_python: Path | None,
    target: Path,
) -> Path:
    if dataset.package is not None:
        if install_python is None:
            raise DataError(f"dataset {bench}/{name} lies in package {dataset.package!r}, but the driver has no install")
        return _in_package(install_python, dataset.package, dataset.path or "", bench, name)
    if dataset.url is not None:
        return _download(dataset.url, target, bench, name, dataset)
    assert dataset.path is not None
    if upstream_dir is None:
        raise DataError(f"dataset {bench}/{name} is a path in the upstream, which this benchmark does not pin; {seed_hint(bench, name, dataset)}")
    try:
        clone = upstream_dir()
    except Exception as exc:  # noqa: BLE001 - the reason goes into the message
        raise DataError(
            f"dataset {bench}/{name} is not in the cache and its upstream cannot be had ({exc}); {seed_hint(bench, name, dataset)}"
        ) from None
    source = clone / dataset.path
    if not source.is_file():
        raise DataError(f"dataset {bench}/{name}: {dataset.path} is not in the upstream at its tested commit")
    return source


def _in_package(python: Path, package: str, inner: str, bench: str, name: str) -> Path:
    code = "import importlib.resources as r, sys; print(r.files(sys.argv[1]).joinpath(sys.argv[2]))"
    done = subprocess.run([str(python), "-c", code, package, inner], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise DataError(f"dataset {bench}/{name}: package {package!r} is not importable in the driver's environment: {done.stderr.strip()[-300:]}")
    found = Path(done.stdout.strip())
    if not found.is_file():
        raise DataError(f"dataset {bench}/{name}: {inner} is not in package {package!r} ({found})")
    return found


def _download(url: str, target: Path, bench: str, name: str, dataset: Dataset) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(".download-" + target.name)
    try:
        with urllib.request.urlopen(url, timeout=60) as response, open(tmp, "wb") as out:  # noqa: S310 - a pinned https URL
            shutil.copyfileobj(response, out)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise DataError(f"cannot download {url} ({exc}); {seed_hint(bench, name, dataset)}") from None
    return tmp
