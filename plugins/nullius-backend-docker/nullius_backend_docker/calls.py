"""Every docker call of a unit (or of the run), timed: where a unit's time went, as a file of its `.work/`.

    # docker calls of nullius-1a2b3c4d5e-answer-box, from 2026-12-01T18:20:35Z (at_s: seconds since then)
    at_s    seconds  step    call                              result
    0.000   0.009    start   POST /containers/create           201
    0.009   0.221    start   POST /containers/{id}/start       204

A trial's `.work/docker-calls.tsv` holds its box's calls (API requests, and the
`docker` commands that stay commands), `step` naming the unit's phase; the
job's `.work/docker-calls.tsv` holds the run's own (the daemon's check, the
sweeps, the images looked up). Appending a row costs a tuple; the file is
written once, when the unit's box is removed (or at the run's end).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

HEADER = "at_s\tseconds\tstep\tcall\tresult\n"


class CallLog:
    def __init__(self, what: str) -> None:
        self.what = what
        self._begin = time.monotonic()
        self._epoch = time.time()
        self.rows: list[tuple[float, float, str, str, str]] = []

    @contextlib.contextmanager
    def timed(self, step: str, call: str) -> Iterator[list[str]]:
        """Times the block as one call; the block sets `result[0]` (a status, an exit, a count), else it reads `failed`."""
        started = time.monotonic()
        result = ["failed"]
        try:
            yield result
        finally:
            # list.append is atomic: the run's log is written to from threads too (the sweep, image look-ups)
            self.rows.append((started - self._begin, time.monotonic() - started, step, call, result[0]))

    def write(self, path: Path) -> None:
        if not self.rows:
            return
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self._epoch))
        lines = [f"# docker calls of {self.what}, from {when} (at_s: seconds since then)\n", HEADER]
        lines += [f"{at:.3f}\t{seconds:.3f}\t{step}\t{call}\t{result}\n" for at, seconds, step, call, result in sorted(self.rows)]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(lines), encoding="utf-8")


def timed(log: CallLog | None, step: str, call: str) -> contextlib.AbstractContextManager[list[str]]:
    """`log.timed(...)`, or a block timed by nobody when there is no log."""
    if log is None:
        return contextlib.nullcontext(["-"])
    return log.timed(step, call)
