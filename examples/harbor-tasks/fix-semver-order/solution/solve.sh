#!/bin/bash
# Reference fix: numeric core fields, SemVer 11.4 pre-release precedence, real pre-release filter.
set -euo pipefail
cd /app
python3 - <<'PY'
from pathlib import Path
p = Path("pkgtools/versions.py")
s = p.read_text()
s = s.replace(
    '    match = _SEMVER.match(text.strip().lstrip("v"))\n    if not match:',
    '    match = _SEMVER.match(text.strip().lstrip("v"))\n'
    '    if match and match["pre"] and any(i.isdigit() and len(i) > 1 and i[0] == "0" for i in match["pre"].split(".")):\n'
    '        match = None  # numeric pre-release identifiers have no leading zeros (SemVer 9)\n'
    '    if not match:',
)
old_compare = s[s.index("def compare("):s.index("def sort_versions(")]
new_compare = '''def _identifier_key(identifier: str) -> tuple[int, int, str]:
    # numeric identifiers compare numerically and rank below alphanumeric ones (SemVer 11.4)
    if identifier.isdigit():
        return (0, int(identifier), "")
    return (1, 0, identifier)


def _key(v: Version) -> tuple:
    core = (int(v.major), int(v.minor), int(v.patch))
    # a version without pre-release ranks above any pre-release of the same core
    pre = (1, ()) if not v.prerelease else (0, tuple(_identifier_key(i) for i in v.prerelease))
    return core + pre


def compare(a: str, b: str) -> int:
    """-1, 0 or 1 as version a has lower, equal or higher precedence than b (build metadata ignored)."""
    left, right = _key(parse(a)), _key(parse(b))
    return (left > right) - (left < right)


'''
s = s.replace(old_compare, new_compare)
s = s.replace('candidates = [v for v in versions if allow_prerelease or "-" in v or True]',
              'candidates = [v for v in versions if allow_prerelease or not parse(v).prerelease]')
p.write_text(s)
PY
PYTHONDONTWRITEBYTECODE=1 python3 -m unittest discover -s tests
