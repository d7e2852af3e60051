#!/bin/bash
# Hidden checks for redact-logs: each file against its expected redaction, gzip intact, modes and owners kept.
mkdir -p /logs/verifier
if python3 /tests/test_redact.py -v; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
