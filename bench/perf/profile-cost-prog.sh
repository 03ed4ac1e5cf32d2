#!/usr/bin/env bash
# What sampling costs a real program (bench/perf/profile-cost.sh does it for
# testdata/perf_spin.c): run COMMAND bare, under `perf record -F HZ
# --call-graph dwarf` and under `sonde profile -F HZ`, alternating, RUNS times
# each. The program's own CPU (user+sys of it and its children, by
# /usr/bin/time inside the profiler) and wall seconds, and the whole run's CPU
# (profiler included); medians.
#   bench/perf/profile-cost-prog.sh HZ RUNS COMMAND ARGS...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
hz=$1 runs=$2
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$repo" && CGO_ENABLED=0 go build -o "$work/sonde" ./cmd/sonde)
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
# run NAME PREFIX...: one run; appends "own-cpu own-wall whole-cpu" to $work/NAME
run() {
	local name=$1
	shift
	/usr/bin/time -o "$work/outer" -f '%U %S' "$@" /usr/bin/time -o "$work/inner" -f '%U %S %e' "${cmd[@]}" >/dev/null 2>&1
	read -r u s e <"$work/inner"
	read -r ou os <"$work/outer"
	echo "$(awk -v u="$u" -v s="$s" 'BEGIN {print u+s}') $e $(awk -v u="$ou" -v s="$os" 'BEGIN {print u+s}')" >>"$work/res-$name"
}
cmd=("$@")
for _ in $(seq "$runs"); do
	run bare
	run perf perf record -q -e cpu-clock -F "$hz" --call-graph dwarf -o "$work/p.data" --
	run sonde "$work/sonde" profile folded -F "$hz" -o "$work/s.folded" --
done
col() { awk -v c="$2" '{print $c}' "$work/res-$1" | median; }
b=$(col bare 1)
echo "load $(cut -d' ' -f1-3 /proc/loadavg); $hz Hz; $runs runs each, medians; command: ${cmd[*]}"
printf '| %-32s | %10s | %8s | %8s | %14s |\n' run "own CPU s" added "wall s" "whole CPU s"
for n in bare perf sonde; do
	c=$(col $n 1)
	added=$(awk -v x="$c" -v b="$b" 'BEGIN {printf "%.1f%%", 100*(x-b)/b}')
	[ $n = bare ] && added=-
	label=$n
	[ $n = perf ] && label="perf record --call-graph dwarf"
	[ $n = sonde ] && label="sonde profile"
	printf '| %-32s | %10s | %8s | %8s | %14s |\n' "$label" "$c" "$added" "$(col $n 2)" "$(col $n 3)"
done
