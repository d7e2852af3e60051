#!/bin/bash
# Hidden checks for photo-import: the whole library and inbox, names and contents.
mkdir -p /logs/verifier
if python3 /tests/test_import.py -v; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
