"""One download for every file Nullius fetches by URL: a dataset, a prefetch file, a wheel.

http(s) only, never this machine's files. The bytes go to a temporary file
beside their place, hashed as they come, and are renamed into place only
once their sha256 is the pin's: whatever fails, nothing is left but whole,
checked files. A download that takes long says its bytes every 5 s while it
goes (heartbeat.Ticker), through the caller's `say`.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

from nullius_core.definitions.urls import bad_download
from nullius_core.heartbeat import Ticker

BLOCK = 1 << 16


class DownloadError(Exception):
    """The file cannot be had: a bad URL, the server's error, a connection that closed early."""


class DigestMismatch(DownloadError):
    """The file came whole, but its sha256 is not the pin's."""


# Called while a download goes: the bytes so far and the whole (None when the server did not say).
Say = Callable[[int, "int | None"], None]


@contextmanager
def beside(target: Path, prefix: str) -> Iterator[Path]:
    """A temporary file beside `target`, renamed onto it when the block ends well, removed whatever else happens."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=prefix, dir=target.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def download(url: str, target: Path, sha256: str, what: str, say: Say | None = None) -> None:
    """Fetch `url` into `target`, refused unless its sha256 is `sha256`. `what` names the file in a refusal."""
    why = bad_download(url)
    if why:  # the definition's reader refuses it already; this machine's files are never "downloaded"
        raise DownloadError(f"{what}: {why}")
    with beside(target, ".download-") as tmp:
        found = _fetch(url, tmp, say)
        if found != sha256:
            raise DigestMismatch(f"{what}: its sha256 is {found}, but the pin is {sha256}; refused")


def _fetch(url: str, tmp: Path, say: Say | None) -> str:
    """The body of `url` written to `tmp`; its sha256."""
    import http.client  # here: every run imports this module, few download (urllib is 2.5 MB a process)
    import urllib.request

    digest = hashlib.sha256()
    got = [0]
    try:
        with urllib.request.urlopen(url, timeout=60) as response, open(tmp, "wb") as out:  # noqa: S310 - http(s) only, pinned by sha256
            total = response.length  # Content-Length, or None
            with Ticker(lambda: say(got[0], total)) if say is not None else nullcontext():
                for block in iter(lambda: response.read(BLOCK), b""):
                    out.write(block)
                    digest.update(block)
                    got[0] += len(block)
            short = response.length  # what Content-Length promised and never came
    except (OSError, http.client.HTTPException, ValueError) as exc:  # a cut connection is an HTTPException (IncompleteRead)
        raise DownloadError(f"cannot download {url} ({type(exc).__name__}: {exc})") from None
    if short:
        raise DownloadError(f"cannot download {url} (the connection closed {short} bytes short)")
    return digest.hexdigest()
