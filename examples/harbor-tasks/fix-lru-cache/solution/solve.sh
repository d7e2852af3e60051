#!/bin/bash
# Reference fix: capacity >= 1, get() refreshes recency, put() evicts only for a new key,
# delete() works for falsy values.
set -euo pipefail
cd /app
python3 - <<'PY'
from pathlib import Path
p = Path("cachelib/lru.py")
s = p.read_text()
s = s.replace("        if capacity < 0:\n", "        if not isinstance(capacity, int) or capacity < 1:\n")
s = s.replace(
    "        if key in self._data:\n            self._hits += 1\n            return self._data[key]\n",
    "        if key in self._data:\n            self._hits += 1\n            self._data.move_to_end(key)\n            return self._data[key]\n",
)
s = s.replace(
    "        if len(self._data) >= self.capacity:\n",
    "        if key in self._data:\n            self._data[key] = value\n            self._data.move_to_end(key)\n            return\n"
    "        if len(self._data) >= self.capacity:\n",
)
s = s.replace(
    "        return self._data.pop(key, None) is not None\n",
    "        if key not in self._data:\n            return False\n        del self._data[key]\n        return True\n",
)
p.write_text(s)
PY
PYTHONDONTWRITEBYTECODE=1 python3 -m unittest discover -s tests
