#!/bin/bash
# Hidden checks for step "import" (and that "add" and "report" still work).
mkdir -p /logs/verifier
if PYTHONDONTWRITEBYTECODE=1 python3 /tests/test_import.py -v; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
