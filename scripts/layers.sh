#!/usr/bin/env bash
# The layer check: reads every #include "..." and #include <arenastat/...>
# line of the library, cache and bench sources, maps both ends to their room
# and fails, naming the file and line, on an include a room may not make
# (an upward edge) and on any cycle of includes between files.
#
#   rooms, bottom to top          may include
#   stats/core                    stats/core
#   stats/report                  stats/core, stats/report
#   stats/control (with cli/)     stats/core, stats/report, stats/control
#   alloc                         stats/core, alloc
#     alloc/include/arenastat/arenastat.hpp (the umbrella)   everything above in this table
#   cache                         stats/*, alloc, cache
#   bench/measure                 bench/measure (arenastat::measure stands alone)
#   bench                         everything
# tests/ and docs/examples/ may include anything and are not read.
#
#   scripts/layers.sh [source root]      (ctest runs it: label "layers")
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"

room_of() {  # path relative to the root -> room name
  case "$1" in
    stats/core/*) echo stats/core ;;
    stats/report/*) echo stats/report ;;
    stats/control/*) echo stats/control ;;
    alloc/*) echo alloc ;;
    cache/*) echo cache ;;
    bench/measure/*) echo bench/measure ;;
    bench/*) echo bench ;;
    *) echo "?" ;;
  esac
}

allowed() {  # from-file to-room -> 0 when the edge is allowed
  local from=$1 to=$2 r
  r=$(room_of "$from")
  [ "$r" = "$to" ] && return 0
  case "$r" in
    stats/core) return 1 ;;
    stats/report) [[ $to == stats/core ]] ;;
    stats/control) [[ $to == stats/core || $to == stats/report ]] ;;
    alloc)
      if [ "$from" = alloc/include/arenastat/arenastat.hpp ]; then
        [[ $to == stats/* ]]
      else
        [[ $to == stats/core ]]
      fi ;;
    cache) [[ $to == stats/* || $to == alloc ]] ;;
    bench/measure) return 1 ;;
    bench) return 0 ;;
    *) return 1 ;;
  esac
}

mapfile -t files < <(find stats alloc cache bench -type f \( -name '*.hpp' -o -name '*.h' -o -name '*.cpp' \) | LC_ALL=C sort)
[ ${#files[@]} -gt 0 ] || { echo "layers: no sources under $root" >&2; exit 2; }

resolve() {  # including-file included-name angle(0/1) -> the file, or nothing
  local from=$1 name=$2 angle=$3 f hits=()
  if [ "$angle" = 0 ]; then
    f=$(realpath -m --relative-to=. "$(dirname "$from")/$name")
    [ -f "$f" ] && { echo "$f"; return; }
  fi
  for f in "${files[@]}"; do
    [[ $f == */"$name" ]] || continue
    # <...> and "arenastat/..." name public headers: only include/ directories
    if [[ $angle = 1 || $name == arenastat/* ]] && [[ $f != */include/"$name" ]]; then continue; fi
    hits+=("$f")
  done
  if [ ${#hits[@]} -gt 1 ]; then  # the same name in two rooms: the including room's own
    for f in "${hits[@]}"; do
      [ "$(room_of "$f")" = "$(room_of "$from")" ] && { echo "$f"; return; }
    done
    echo "AMBIGUOUS:${hits[*]}"
    return
  fi
  [ ${#hits[@]} -eq 1 ] && echo "${hits[0]}"
  return 0
}

status=0
edges=$(mktemp)
trap 'rm -f "$edges"' EXIT
nedges=0
for from in "${files[@]}"; do
  while IFS=: read -r line text; do
    if [[ $text =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\"([^\"]+)\" ]]; then
      name=${BASH_REMATCH[1]}; angle=0
    elif [[ $text =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\<(arenastat/[^\>]+)\> ]]; then
      name=${BASH_REMATCH[1]}; angle=1
    else
      continue
    fi
    to=$(resolve "$from" "$name" "$angle")
    if [ -z "$to" ]; then
      echo "$from:$line: includes \"$name\", which is no file of the library, cache or bench" >&2
      status=1; continue
    fi
    if [[ $to == AMBIGUOUS:* ]]; then
      echo "$from:$line: \"$name\" names several files: ${to#AMBIGUOUS:}" >&2
      status=1; continue
    fi
    nedges=$((nedges + 1))
    echo "$from $to $line" >>"$edges"
    if ! allowed "$from" "$(room_of "$to")"; then
      echo "$from:$line: upward include: room $(room_of "$from") includes $to (room $(room_of "$to"))" >&2
      status=1
    fi
  done < <(grep -n '^[[:space:]]*#[[:space:]]*include' "$from" || true)
done

# Cycles between files (rooms cannot form one when every edge points down or
# stays in its room, but two files of one room can).
loop=$(cut -d' ' -f1,2 "$edges" | tsort 2>&1 >/dev/null | grep -v 'input contains a loop' | sed 's/^tsort: //' || true)
if [ -n "$loop" ]; then
  echo "include cycle among:" >&2
  while read -r from to line; do
    if grep -qxF "$from" <<<"$loop" && grep -qxF "$to" <<<"$loop"; then
      echo "$from:$line: includes $to" >&2
    fi
  done <"$edges"
  status=1
fi

if [ $status -eq 0 ]; then
  echo "layers: ${#files[@]} files, $nedges includes of the project's own headers, no upward edge, no cycle"
fi
exit $status
