#!/bin/bash
# Reference solution: read the index (git diff --cached -z, git cat-file/show ":path"), never the working tree.
set -euo pipefail
cat > /app/.git/hooks/pre-commit <<'HOOK'
#!/bin/bash
# Refuse commits whose staged files hold "DO NOT COMMIT", trailing whitespace (*.py) or more than 1 MiB.
status=0
while IFS= read -r -d '' path; do
  size=$(git cat-file -s ":$path")
  if [ "$size" -gt 1048576 ]; then
    echo "$path: larger than 1 MiB ($size bytes)" >&2; status=1; continue
  fi
  if git cat-file blob ":$path" | grep -q -F 'DO NOT COMMIT'; then
    echo "$path: contains DO NOT COMMIT" >&2; status=1
  fi
  case $path in
    *.py)
      if git cat-file blob ":$path" | grep -q -E '[[:blank:]]$'; then
        echo "$path: trailing whitespace" >&2; status=1
      fi ;;
  esac
done < <(git diff --cached --name-only -z --diff-filter=ACMR)
exit $status
HOOK
chmod 755 /app/.git/hooks/pre-commit
