"""Package versions: parsing, precedence and sorting (Semantic Versioning 2.0.0)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cmp_to_key

_SEMVER = re.compile(
    r"^(?P<major>0|[1-9]\d*)\.(?P<minor>0|[1-9]\d*)\.(?P<patch>0|[1-9]\d*)"
    r"(?:-(?P<pre>[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
    r"(?:\+(?P<build>[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$"
)


@dataclass(frozen=True)
class Version:
    major: str
    minor: str
    patch: str
    prerelease: tuple[str, ...] = ()
    build: tuple[str, ...] = ()

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(self.prerelease)
        if self.build:
            text += "+" + ".".join(self.build)
        return text


def parse(text: str) -> Version:
    """Parse 'MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]'; a leading 'v' is allowed. ValueError otherwise."""
    match = _SEMVER.match(text.strip().lstrip("v"))
    if not match:
        raise ValueError(f"not a semantic version: {text!r}")
    pre = tuple(match["pre"].split(".")) if match["pre"] else ()
    build = tuple(match["build"].split(".")) if match["build"] else ()
    return Version(match["major"], match["minor"], match["patch"], pre, build)


def compare(a: str, b: str) -> int:
    """-1, 0 or 1 as version a has lower, equal or higher precedence than b (build metadata ignored)."""
    va, vb = parse(a), parse(b)
    left = (va.major, va.minor, va.patch, va.prerelease)
    right = (vb.major, vb.minor, vb.patch, vb.prerelease)
    return (left > right) - (left < right)


def sort_versions(versions: list[str]) -> list[str]:
    """The versions from lowest to highest precedence (stable for equal precedence)."""
    return sorted(versions, key=cmp_to_key(compare))


def latest(versions: list[str], allow_prerelease: bool = False) -> str | None:
    """The highest version, ignoring pre-releases unless allow_prerelease; None if there is none."""
    candidates = [v for v in versions if allow_prerelease or "-" in v or True]
    if not candidates:
        return None
    return sort_versions(candidates)[-1]
