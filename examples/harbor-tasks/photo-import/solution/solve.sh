#!/bin/bash
# Reference solution: bash regexes for the three name forms, `date -d` for real dates, cmp for duplicates.
set -euo pipefail
export LC_ALL=C
cd /data/inbox
valid() {  # YYYY MM DD hh mm ss
  [ "$4" -lt 24 ] 2>/dev/null && [ "${5#0}" -lt 60 ] && [ "${6#0}" -lt 60 ] || return 1
  [ "$(date -u -d "$1-$2-$3" +%Y-%m-%d 2>/dev/null)" = "$1-$2-$3" ]
}
for f in *; do
  [ -f "$f" ] || continue
  lower_ext=$(printf '%s' "${f##*.}" | tr 'A-Z' 'a-z')
  [ "$lower_ext" = jpg ] || [ "$lower_ext" = jpeg ] || continue
  stem=${f%.*}
  if [[ $stem =~ ^IMG_([0-9]{4})([0-9]{2})([0-9]{2})_([0-9]{2})([0-9]{2})([0-9]{2})$ ]] \
     || [[ $stem =~ ^PXL_([0-9]{4})([0-9]{2})([0-9]{2})_([0-9]{2})([0-9]{2})([0-9]{2})[0-9]{3}$ ]] \
     || [[ $stem =~ ^([0-9]{4})-([0-9]{2})-([0-9]{2})\ ([0-9]{2})\.([0-9]{2})\.([0-9]{2})$ ]]; then
    m=("${BASH_REMATCH[@]:1}")
  else
    continue
  fi
  valid "${m[@]}" || continue
  dir="/data/library/${m[0]}/${m[1]}"
  base="${m[0]}${m[1]}${m[2]}-${m[3]}${m[4]}${m[5]}"
  mkdir -p "$dir"
  target="$dir/$base.jpg"; n=0; duplicate=
  while [ -e "$target" ]; do
    if cmp -s "$f" "$target"; then duplicate=1; break; fi
    n=$((n + 1)); target="$dir/$base-$n.jpg"
  done
  if [ -n "$duplicate" ]; then
    rm -f -- "$f"
  else
    # a later variant may still hold the same content: look further before moving
    k=$((n + 1))
    while [ -e "$dir/$base-$k.jpg" ]; do
      if cmp -s "$f" "$dir/$base-$k.jpg"; then duplicate=1; break; fi
      k=$((k + 1))
    done
    if [ -n "$duplicate" ]; then rm -f -- "$f"; else mv -- "$f" "$target"; fi
  fi
done
