#!/bin/bash
# Hidden checks for fix-lru-cache: the project's own tests, unchanged, and every documented behaviour.
mkdir -p /logs/verifier
if PYTHONDONTWRITEBYTECODE=1 python3 /tests/test_hidden.py -v; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
