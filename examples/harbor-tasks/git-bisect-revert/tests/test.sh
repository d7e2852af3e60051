#!/bin/bash
# Hidden checks for git-bisect-revert: the named commit, one revert on top of v1.3.0, later changes kept.
mkdir -p /logs/verifier
if PYTHONDONTWRITEBYTECODE=1 python3 /tests/test_bisect.py -v; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
