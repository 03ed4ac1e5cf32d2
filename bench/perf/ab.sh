#!/usr/bin/env bash
# Compares sonde binaries on one recording, interleaved, start-up included:
#
#   bench/perf/ab.sh RUNS PERF.DATA SONDE... [-- VERB ARGS]
#
# runs `SONDE perf folded -i PERF.DATA` (or `SONDE perf VERB ARGS -i
# PERF.DATA`) once per binary per round, RUNS rounds, and prints each
# binary's median wall and CPU (task-clock: user+sys of every thread, in
# ms), its lower-quartile CPU, page faults and context switches, from
# `perf stat`. The recording's binaries must still be where it says.
#
# With SONDE_AB_RT=1 every run is at real-time priority (chrt -f 50): on a
# machine others load, sonde then has both CPUs whenever it wants them
# (the kernel keeps 5% of each second for the others), so its wall time
# means something again, though memory and the host stay shared.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: bench/perf/ab.sh RUNS PERF.DATA SONDE... [-- VERB ARGS]" >&2; exit 2; }
runs=$1 data=$2
shift 2
bins=() args=(folded)
while [ $# -gt 0 ]; do
	if [ "$1" = -- ]; then shift; args=("$@"); break; fi
	bins+=("$1"); shift
done
for b in "${bins[@]}"; do
	# A plain `go build` with gcc around links libc dynamically (cgo, for net
	# and os/user): ~4 ms of wall and ~5 ms of CPU more per run here than
	# the static CGO_ENABLED=0 build run.sh and the release use.
	if readelf -l "$b" 2>/dev/null | grep -q 'program interpreter'; then
		echo "note: $b is dynamically linked; build with CGO_ENABLED=0 to time what run.sh times" >&2
	fi
done
rt=()
[ -z "${SONDE_AB_RT:-}" ] || rt=(chrt -f 50)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for _ in $(seq "$runs"); do
	for i in "${!bins[@]}"; do
		"${rt[@]}" perf stat -o "$work/stat" -e task-clock,page-faults,context-switches \
			"${bins[$i]}" perf "${args[@]}" -i "$data" >/dev/null 2>&1
		awk '{gsub(",", "", $1)} $2 == "msec" && $3 == "task-clock" {c = $1} $2 == "page-faults" {f = $1}
			$2 == "context-switches" {x = $1} $3 == "time" && $4 == "elapsed" {w = $1 * 1000}
			END {printf "%.1f %.1f %d %d\n", w, c, f, x}' "$work/stat" >>"$work/$i"
	done
done
q() { sort -n | awk -v q="$1" '{a[NR] = $1} END {print a[int(q * (NR - 1)) + 1]}'; }
echo "$runs rounds on $data ($(du -m "$data" | cut -f1) MB); load $(cut -d' ' -f1-3 /proc/loadavg)${SONDE_AB_RT:+; real-time priority}"
printf '| %-28s | %8s | %8s | %11s | %7s | %7s |\n' binary "wall ms" "CPU ms" "CPU q1 ms" faults "ctx sw"
printf '|%s|%s|%s|%s|%s|%s|\n' "------------------------------" ---------- ---------- ------------- --------- ---------
for i in "${!bins[@]}"; do
	f=$work/$i
	printf '| %-28s | %8s | %8s | %11s | %7s | %7s |\n' "${bins[$i]}" "$(cut -d' ' -f1 "$f" | q 0.5)" \
		"$(cut -d' ' -f2 "$f" | q 0.5)" "$(cut -d' ' -f2 "$f" | q 0.25)" "$(cut -d' ' -f3 "$f" | q 0.5)" "$(cut -d' ' -f4 "$f" | q 0.5)"
done
