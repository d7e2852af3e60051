#!/bin/bash
# Reference solution: GNU tar with --exclude patterns, run from /data so paths start with projects/.
set -euo pipefail
date=$(tr -d '-' < /data/BACKUP_DATE | tr -d '[:space:]')
name="projects-$date"
mkdir -p /backups
cd /data
tar --create --gzip --file "/backups/$name.tar.gz" \
    --exclude='node_modules' --exclude='.cache' --exclude='*.tmp' projects
cd /backups
sha256sum "$name.tar.gz" > "$name.tar.gz.sha256"
# directories are listed with a trailing slash
tar --list --gzip --file "$name.tar.gz" | grep -v '/$' | LC_ALL=C sort > "$name.txt"
