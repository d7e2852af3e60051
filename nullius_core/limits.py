"""Open files: the soft limit raised to the hard one at start, and telling when a call ran out of them.

A relay under a thousand concurrent streams holds two descriptors a stream
(the caller's connection and the provider's); a soft limit of 1,024, the
usual default, is spent long before the hard one. Children inherit the
raised limit.
"""

from __future__ import annotations

import errno
import resource
from pathlib import Path

_OUT_OF_FILES = frozenset({errno.EMFILE, errno.ENFILE})


def raise_open_files() -> tuple[int, int]:
    """The soft RLIMIT_NOFILE raised to the hard limit; the (soft, hard) limits it leaves.

    An unlimited hard limit is taken as the kernel's own ceiling
    (`/proc/sys/fs/nr_open`), which is what setrlimit accepts.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard
    if hard == resource.RLIM_INFINITY:
        try:
            target = int(Path("/proc/sys/fs/nr_open").read_text())
        except (OSError, ValueError):
            return soft, hard
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (OSError, ValueError):  # a sandbox that forbids it: the soft limit stays as it was
            return soft, hard
        return target, hard
    return soft, hard


def out_of_files(exc: BaseException | None) -> bool:
    """Whether `exc`, or what it wraps, is the process (or the system) out of file descriptors."""
    seen = 0
    while exc is not None and seen < 8:
        for candidate in (exc, getattr(exc, "os_error", None)):
            if getattr(candidate, "errno", None) in _OUT_OF_FILES:
                return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False
