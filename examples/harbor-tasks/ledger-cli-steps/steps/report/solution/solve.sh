#!/bin/bash
# Reference solution for step "report": the tool with `add` and `report`.
set -euo pipefail
install -m 755 /solution/ledger.py /app/ledger.py
