#!/bin/bash
# Reference solution: zcat -f over the rotations, awk to parse and group, sort for the percentiles.
set -euo pipefail
export LC_ALL=C
mkdir -p /output
work=$(mktemp -d)
zcat -f /var/log/nginx/access.log.2.gz /var/log/nginx/access.log.1 /var/log/nginx/access.log \
  | awk -v skipped="$work/skipped" '
    /^[[:space:]]*$/ { next }
    {
      ok = match($0, /^[^ ]+ [^ ]+ [^ ]+ \[[^]]+\] "[^ "]+ [^ "]+ [^ "]+" [0-9][0-9][0-9] ([0-9]+|-) "[^"]*" "[^"]*" [0-9]+\.[0-9][0-9][0-9]$/)
      if (!ok) { bad++; next }
      split($0, q, "\"")
      split(q[2], req, " ")
      path = req[2]; sub(/\?.*/, "", path)
      n = split(path, seg, "/"); out = ""
      for (i = 1; i <= n; i++) { s = seg[i]; if (s ~ /^[0-9]+$/) s = ":id"; out = out (i > 1 ? "/" : "") s }
      split(q[3], after, " ")
      ms = $NF; sub(/\./, "", ms); ms += 0
      printf "%s %s\t%d\t%d\n", req[1], out, ms, after[1]
    }
    END { print bad + 0 > skipped }' > "$work/requests.tsv"
cp "$work/skipped" /output/skipped.txt
sort -t "$(printf '\t')" -k1,1 -k2,2n "$work/requests.tsv" \
  | awk -F '\t' '
    function flush(   p50, p95) {
      if (n == 0) return
      p50 = int((50 * n + 99) / 100); p95 = int((95 * n + 99) / 100)
      printf "%s,%d,%d,%d,%.4f\n", ep, n, t[p50], t[p95], errors / n
    }
    $1 != ep { flush(); ep = $1; n = 0; errors = 0 }
    { t[++n] = $2; if ($3 >= 500) errors++ }
    END { flush() }' \
  | sort -t, -k2,2nr -k1,1 > "$work/rows.csv"
{ echo "endpoint,requests,p50_ms,p95_ms,error_rate"; cat "$work/rows.csv"; } > /output/latency.csv
rm -rf "$work"
