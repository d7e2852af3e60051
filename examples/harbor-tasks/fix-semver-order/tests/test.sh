#!/bin/bash
# Hidden checks for fix-semver-order: the project's own tests and SemVer 2.0.0 precedence cases.
mkdir -p /logs/verifier
if PYTHONDONTWRITEBYTECODE=1 python3 /tests/test_hidden.py -v; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
