"""A benchmark's driver prepared outside a run (its install, dataset and licences as a run has them), for one command's ops."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from nullius_core.licences.handout import remove_run
from nullius_core.run.prepare import Prepared, prepare, with_driver_licences
from nullius_core.run.progress import Progress
from nullius_core.session import Session
from nullius_core.run.spec import RunSpec


@contextmanager
def prepared_driver(session: Session, spec: RunSpec, label: str, progress: Progress | None = None) -> Iterator[Prepared]:
    """`spec` prepared as a control's run is (RunRefused when it cannot be), its driver's licences handed out until the end."""
    with tempfile.TemporaryDirectory(prefix=f"nullius-{label}-") as scratch:
        prepared = prepare(session, spec, progress or Progress(), Path(scratch) / "driver")
        run = f"{label}-{Path(scratch).name}"
        licensed, licences = with_driver_licences(session.paths.secrets_dir, prepared, run)
        try:
            yield licensed
        finally:
            licences.remove()
            remove_run(run)
