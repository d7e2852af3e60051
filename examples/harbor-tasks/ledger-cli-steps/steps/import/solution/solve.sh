#!/bin/bash
# Reference solution for step "import": the tool with `add`, `report` and `import`.
set -euo pipefail
install -m 755 /solution/ledger.py /app/ledger.py
