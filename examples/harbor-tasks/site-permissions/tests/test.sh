#!/bin/bash
# Hidden checks for site-permissions: walks /srv/site with lstat and compares against the policy.
mkdir -p /logs/verifier
if python3 /tests/test_permissions.py -v; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
