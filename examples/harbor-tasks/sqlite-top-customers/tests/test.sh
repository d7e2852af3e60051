#!/bin/bash
# Hidden checks for sqlite-top-customers: the CSV byte for byte, the query's rows, the database unchanged.
mkdir -p /logs/verifier
if python3 /tests/test_top.py -v; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
