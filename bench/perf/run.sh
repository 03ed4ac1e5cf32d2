#!/usr/bin/env bash
# sonde perf against perf's own reading of the same recording, in one run:
#
#   bench/perf/run.sh [SECONDS [HZ [RUNS]]]
#
# Records testdata/perf_spin.c (gcc -O2 -g, CPU-bound, an inlined helper)
# with `perf record -e cpu-clock -F HZ --call-graph dwarf` for SECONDS
# (default 12 s at 4000 Hz: the issue's ~300 MB recording), then times, each
# in a fresh process with start-up included:
#   sonde perf folded               (inline frames and lines)
#   sonde perf folded --no-inline
#   perf script --no-inline         (perf's fastest full unwind)
#   perf script                     (with inline frames, through addr2line)
# Each runs RUNS times (default 5) under /usr/bin/time; the table shows the
# median wall and CPU seconds, the peak RSS and each command's wall time over
# sonde's folded output's.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
secs=${1:-12}
hz=${2:-4000}
runs=${3:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
command -v perf >/dev/null || { echo "bench/perf: perf is not installed (apt-get install linux-perf)" >&2; exit 1; }
gcc -O2 -g -o "$work/perf_spin" "$repo/testdata/perf_spin.c"
(cd "$repo" && CGO_ENABLED=0 go build -o "$work/sonde" ./cmd/sonde)
echo "recording ${secs}s at ${hz} Hz ..." >&2
perf record -q -e cpu-clock -F "$hz" --call-graph dwarf -o "$work/perf.data" -- "$work/perf_spin" $((secs * 1000)) >/dev/null
samples=$(perf report --stats -i "$work/perf.data" 2>/dev/null | awk '/SAMPLE events:/ {print $3; exit}')
size=$(du -m "$work/perf.data" | cut -f1)
echo "recording: $samples samples, $size MB; $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
cmds=(
	"sonde perf folded|$work/sonde perf folded -i $work/perf.data"
	"sonde perf folded --no-inline|$work/sonde perf folded --no-inline -i $work/perf.data"
	"perf script --no-inline|perf script --no-inline -i $work/perf.data"
	"perf script|perf script -i $work/perf.data"
)
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
printf '| %-32s | %10s | %10s | %9s | %8s |\n' command "median s" "CPU s" "peak MB" "÷ sonde"
printf '|%s|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..34})" ------------ ------------ ----------- ----------
base=""
for entry in "${cmds[@]}"; do
	name=${entry%%|*}
	cmd=${entry#*|}
	walls=() cpus=() rss=0
	for _ in $(seq "$runs"); do
		out=$( { /usr/bin/time -f '%e %U %S %M' sh -c "$cmd >/dev/null 2>/dev/null"; } 2>&1 | tail -1)
		read -r wall user sys kb <<<"$out"
		walls+=("$wall")
		cpus+=("$(awk -v u="$user" -v s="$sys" 'BEGIN {print u + s}')")
		rss=$((kb > rss ? kb : rss))
	done
	w=$(printf '%s\n' "${walls[@]}" | median)
	c=$(printf '%s\n' "${cpus[@]}" | median)
	[ -n "$base" ] || base=$w
	printf '| %-32s | %10s | %10s | %9d | %8.1f |\n' "$name" "$w" "$c" $((rss / 1024)) "$(awk -v w="$w" -v b="$base" 'BEGIN {print w / b}')"
done
