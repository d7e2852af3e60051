#!/bin/bash
# Hidden checks for git-precommit-hook: copies the hook into scratch repositories and commits.
mkdir -p /logs/verifier
if python3 /tests/test_hook.py -v; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
