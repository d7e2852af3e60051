#!/bin/bash
# Reference solution: find -mtime for the age, a keep-list read into an associative array,
# find -empty -delete for the folders, and a cron.d file with the variable on its own line.
set -euo pipefail
cat > /usr/local/bin/cleanup-uploads <<'SH'
#!/bin/bash
# Delete uploads older than RETENTION_DAYS (default 14), except the names in .keep.
set -uo pipefail
ROOT=/srv/uploads
DAYS=${RETENTION_DAYS:-14}
LOG=/var/log/cleanup-uploads.log
declare -A keep=([.keep]=1)
if [ -f "$ROOT/.keep" ]; then
  while IFS= read -r line || [ -n "$line" ]; do
    name=$(printf '%s' "$line" | sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//')
    [ -z "$name" ] && continue
    case $name in \#*) continue ;; esac
    keep[$name]=1
  done < "$ROOT/.keep"
fi
status=0
while IFS= read -r -d '' file; do
  base=${file##*/}
  [ -n "${keep[$base]:-}" ] && continue
  if rm -f -- "$file"; then
    printf 'deleted %s\n' "$file" >> "$LOG" || status=1
  else
    status=1
  fi
done < <(find "$ROOT" -type f -mtime +"$DAYS" -print0)
find "$ROOT" -mindepth 1 -depth -type d -empty -delete
exit $status
SH
chmod 755 /usr/local/bin/cleanup-uploads
touch /var/log/cleanup-uploads.log
chown www-data:www-data /var/log/cleanup-uploads.log
cat > /etc/cron.d/cleanup-uploads <<'CRON'
# Retention for /srv/uploads: every day at 03:15, as www-data
RETENTION_DAYS=30
15 3 * * * www-data /usr/local/bin/cleanup-uploads
CRON
chmod 644 /etc/cron.d/cleanup-uploads
