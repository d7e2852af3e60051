#!/bin/bash
# Reference solution: one awk program; names kept in first-seen order, values overwritten.
set -euo pipefail
awk '
function trim(s) { sub(/^[ \t\r]+/, "", s); sub(/[ \t\r]+$/, "", s); return s }
function varname(s) { s = toupper(s); gsub(/[^A-Z0-9]+/, "_", s); return s }
function value(v,   q) {
  v = trim(v)
  q = substr(v, 1, 1)
  if (length(v) >= 2 && (q == "\"" || q == "\047") && substr(v, length(v), 1) == q)
    return substr(v, 2, length(v) - 2)
  sub(/[ \t]+[;#].*$/, "", v)
  return trim(v)
}
/^[ \t]*([;#]|$)/ { next }
/^[ \t]*\[.*\][ \t]*$/ { s = trim($0); section = substr(s, 2, length(s) - 2); next }
{
  i = index($0, "=")
  if (i == 0) next
  key = trim(substr($0, 1, i - 1))
  name = (section == "DEFAULT" || section == "") ? varname(key) : varname(section "_" key)
  if (!(name in vals)) order[++n] = name
  vals[name] = value(substr($0, i + 1))
}
END {
  for (k = 1; k <= n; k++) {
    v = vals[order[k]]
    gsub(/\047/, "\047\\\047\047", v)
    printf "%s=\047%s\047\n", order[k], v
  }
}' /etc/app/app.ini > /etc/app/app.env
