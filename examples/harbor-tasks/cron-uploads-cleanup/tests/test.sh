#!/bin/bash
# Hidden checks for cron-uploads-cleanup: runs the script as www-data on a fresh fixture,
# then runs the crontab line's command the way cron would, and checks the file's form.
mkdir -p /logs/verifier
if python3 /tests/test_cleanup.py -v; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
