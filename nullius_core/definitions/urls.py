"""What a definition may download: http(s) URLs only, and the files `prefetch` names by URL and sha256."""

from __future__ import annotations

import re
import urllib.parse

import attrs

SHA256 = re.compile(r"^[0-9a-f]{64}$")


def bad_download(url: str) -> str | None:
    """Why `url` is not one to download from, or None when it is: http(s) only, never this machine's files (file://)."""
    if url.startswith(("http://", "https://")):
        return None
    return f"expected an http:// or https:// URL, found {url!r}"


@attrs.frozen
class Prefetch:
    """A file an install downloads ahead: `URL#sha256=<64 lowercase hex>`, kept as `<install>/prefetch/<name>`."""

    url: str
    sha256: str
    name: str  # the last part of the URL's path


def url_file_name(url: str) -> str:
    """The last part of the URL's path (no query, no fragment), `%xx` decoded; "" when that is no file's name."""
    name = urllib.parse.unquote(urllib.parse.urlsplit(url).path.rsplit("/", 1)[-1])
    return "" if name in (".", "..") or any(c in name for c in "/\\\0") else name


def prefetch_entry(entry: str) -> Prefetch | str:
    """The file a `prefetch` entry names, or why the entry is not one."""
    url, _, fragment = entry.rpartition("#")
    if not url or not fragment.startswith("sha256=") or not SHA256.match(fragment[len("sha256="):]):
        return f"expected URL#sha256=<64 lowercase hex digits>, found {entry!r}"
    why = bad_download(url)
    if why:
        return why
    name = url_file_name(url)
    if not name:
        return f"expected a URL whose path ends in a file name, found {url!r}"
    return Prefetch(url=url, sha256=fragment[len("sha256="):], name=name)
