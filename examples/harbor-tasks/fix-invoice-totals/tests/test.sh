#!/bin/bash
# Hidden checks for fix-invoice-totals: the project's own tests, hidden money cases,
# the visible tests untouched, and the fix committed by the named author.
mkdir -p /logs/verifier
if python3 /tests/test_hidden.py -v; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
