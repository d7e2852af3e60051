#!/bin/bash
# Reference solution: git bisect run with a one-line check, then git revert of the first bad commit.
set -euo pipefail
cd /app
git bisect start v1.3.0 v1.0.0 >/dev/null
git bisect run python3 -B -c 'import stats, sys; sys.exit(0 if stats.median([1, 2, 3, 4]) == 2.5 else 1)' > /tmp/bisect.log
bad=$(git rev-parse refs/bisect/bad)
git bisect reset >/dev/null 2>&1
git checkout -q main
echo "$bad" > /root/first-bad-commit
git -c user.name=Oracle -c user.email=oracle@example.com revert --no-edit "$bad" >/dev/null
