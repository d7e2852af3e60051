#!/bin/bash
# Reference solution for step "record": the tool with its `add` command.
set -euo pipefail
install -m 755 /solution/ledger.py /app/ledger.py
