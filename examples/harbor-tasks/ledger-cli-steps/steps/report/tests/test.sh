#!/bin/bash
# Hidden checks for step "report" (and that "add" still works).
mkdir -p /logs/verifier
if PYTHONDONTWRITEBYTECODE=1 python3 /tests/test_report.py -v; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
