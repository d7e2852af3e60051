#!/bin/bash
# Hidden checks for offline-docs-build: a fresh build without network, its pages and stylesheet,
# a failing build without the vendored file, and the change committed.
mkdir -p /logs/verifier
if PYTHONDONTWRITEBYTECODE=1 python3 /tests/test_build.py -v; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
