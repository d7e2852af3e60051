#!/bin/bash
# Reference fix: try "ms" before "m" in the unit alternation; carry every unit in the formatter.
set -euo pipefail
cd /app
python3 - <<'PY'
from pathlib import Path
p = Path("src/duration.js")
s = p.read_text()
s = s.replace(r"const part = /(\d+)\s*(d|h|m|s|ms)\s*/y;", r"const part = /(\d+)\s*(ms|d|h|m|s)(?![a-z])\s*/y;")
s = s.replace(
    "    if (rest >= size && (unit === 'ms' || rest % size === 0)) {",
    "    if (rest >= size) {",
)
s = s.replace("  return sign + (out || `${rest}ms`);", "  return sign + out;")
p.write_text(s)
PY
npm test --silent
