#!/bin/bash
# Builds /app: 40 commits of a small statistics module, with fixed dates so that every build is identical.
set -euo pipefail
mkdir -p /app/tests && cd /app
git init -q -b main
n=0
commit() {
  n=$((n + 1))
  git add -A
  GIT_AUTHOR_DATE="2024-01-01T00:00:00Z +$((n * 3600))" GIT_COMMITTER_DATE="2024-01-01T00:00:00Z +$((n * 3600))" \
    git -c user.name="Dev $((n % 3))" -c user.email="dev$((n % 3))@example.com" commit -q --date="@$((1704067200 + n * 3600)) +0000" -m "$1"
}
cat > stats.py <<'PY'
"""Small statistics helpers."""


def mean(xs):
    xs = list(xs)
    if not xs:
        raise ValueError("mean of nothing")
    return sum(xs) / len(xs)


def median(xs):
    xs = sorted(xs)
    if not xs:
        raise ValueError("median of nothing")
    mid = len(xs) // 2
    if len(xs) % 2:
        return xs[mid]
    return (xs[mid - 1] + xs[mid]) / 2
PY
printf 'import unittest\n\nfrom stats import mean, median\n\n\nclass StatsTest(unittest.TestCase):\n    def test_mean(self):\n        self.assertEqual(mean([1, 2, 3]), 2)\n\n    def test_median_odd(self):\n        self.assertEqual(median([3, 1, 2]), 2)\n\n\nif __name__ == "__main__":\n    unittest.main()\n' > tests/test_stats.py
printf '# Changelog\n' > CHANGELOG.md
commit "stats: mean and median"
for i in $(seq 2 40); do
  case $i in
    10) echo "- 1.0.0" >> CHANGELOG.md; commit "release 1.0.0"; git tag v1.0.0 ;;
    27) python3 - <<'PY'
from pathlib import Path
p = Path("stats.py")
s = p.read_text()
old = """    xs = sorted(xs)
    if not xs:
        raise ValueError("median of nothing")
    mid = len(xs) // 2
    if len(xs) % 2:
        return xs[mid]
    return (xs[mid - 1] + xs[mid]) / 2
"""
new = """    xs = sorted(xs)
    if not xs:
        raise ValueError("median of nothing")
    return xs[len(xs) // 2]
"""
p.write_text(s.replace(old, new))
PY
        commit "stats: speed up median" ;;
    20) printf '\n\ndef total(xs):\n    return sum(xs)\n' >> stats.py; commit "stats: total" ;;
    33) printf '\n\ndef mode(xs):\n    xs = list(xs)\n    return max(sorted(set(xs)), key=xs.count)\n' >> stats.py; commit "stats: mode" ;;
    36) printf '\n\ndef spread(xs):\n    xs = list(xs)\n    return max(xs) - min(xs)\n' >> stats.py; commit "stats: spread" ;;
    30) echo "- 1.2.0" >> CHANGELOG.md; commit "release 1.2.0"; git tag v1.2.0 ;;
    40) echo "- 1.3.0" >> CHANGELOG.md; commit "release 1.3.0"; git tag v1.3.0 ;;
    *) echo "- change $i" >> CHANGELOG.md; printf '# note %s\n' "$i" > "notes-$((i % 5)).md"; commit "docs: note $i" ;;
  esac
done
