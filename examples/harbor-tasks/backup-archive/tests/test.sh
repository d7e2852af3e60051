#!/bin/bash
# Hidden checks for backup-archive: the archive's members and modes, the checksum file, the manifest.
mkdir -p /logs/verifier
if python3 /tests/test_backup.py -v; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
