#!/bin/bash
# Reference solution: copy the vendored stylesheet instead of downloading it.
set -euo pipefail
cd /app
python3 - <<'PY'
from pathlib import Path
p = Path("build.py")
s = p.read_text()
s = s.replace('''def fetch_theme(dest):
    with urllib.request.urlopen(THEME_URL, timeout=20) as resp:
        dest.write_bytes(resp.read())''', '''def fetch_theme(dest):
    # offline: the theme comes from the vendored copy (a missing copy fails the build)
    shutil.copyfile(ROOT / "vendor" / "theme.min.css", dest)''')
p.write_text(s)
PY
PYTHONDONTWRITEBYTECODE=1 python3 build.py
git add build.py
git -c user.name=Oracle -c user.email=oracle@example.com commit -q -m "Build offline from the vendored theme"
