#!/usr/bin/env bash
# sonde perf against perf's own reading of the same recording, in one run:
#
#   bench/perf/run.sh [SECONDS [HZ [RUNS [PERF.DATA]]]]
#
# Records testdata/perf_spin.c (gcc -O2 -g, CPU-bound, an inlined helper)
# with `perf record -e cpu-clock -F HZ --call-graph dwarf` for SECONDS
# (default 12 s at 4000 Hz: the issue's ~300 MB recording; with a fourth
# argument, reads that recording instead: its binaries must still be there),
# then times, each in a fresh process with start-up included:
#   sonde perf folded               (inline frames and lines; the persisted
#                                    cache warm, as after a first run)
#   sonde perf folded --no-inline
#   sonde perf folded, cold cache   (an empty cache each run: kernel symbols
#                                    from /proc/kallsyms, every line table)
#   perf script --no-inline         (perf's fastest full unwind)
#   perf script                     (with inline frames, through addr2line)
#   cat perf.data > /dev/null       (reading the file from the page cache:
#                                    what no tool can go below)
# With SONDE=BINARY in the environment that sonde is timed instead of one
# built from this tree.
# With SONDE_BENCH_MB=1024 in the environment the recording is grown to about
# that size first (bench/perf/repeat: its data section written again and
# again, each copy later in time), for the issue's 1 GB throughput figure on a
# machine too loaded to record that much.
# With SONDE_BENCH_RT=1 every timed command runs at real-time priority
# (chrt -f 50, as bench/perf/ab.sh's SONDE_AB_RT=1): on a machine others
# load, the wall times mean something again.
# A recording made or grown here is written back to disk (sync) before
# anything is timed, so that the kernel's write-back of a fresh GB (due ~30 s
# after it was written: during the rounds) is not timed with them.
# In RUNS rounds (default 5) every command runs once, so that a machine whose
# load changes weighs on all alike. The table shows each command's median wall
# and CPU (user+sys) seconds under /usr/bin/time, its peak RSS, and its wall
# and CPU over sonde perf folded's. On a shared machine the CPU ratio is the
# one to quote.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
secs=${1:-12}
hz=${2:-4000}
runs=${3:-5}
data=${4:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
command -v perf >/dev/null || { echo "bench/perf: perf is not installed (apt-get install linux-perf)" >&2; exit 1; }
if [ -n "${SONDE:-}" ]; then
	cp "$SONDE" "$work/sonde" # a binary built elsewhere (another branch's, for A/B)
else
	(cd "$repo" && CGO_ENABLED=0 go build -o "$work/sonde" ./cmd/sonde)
fi
if [ -z "$data" ]; then
	gcc -O2 -g -o "$work/perf_spin" "$repo/testdata/perf_spin.c"
	echo "recording ${secs}s at ${hz} Hz ..." >&2
	data=$work/perf.data
	perf record -q -e cpu-clock -F "$hz" --call-graph dwarf -o "$data" -- "$work/perf_spin" $((secs * 1000)) >/dev/null
fi
if [ -n "${SONDE_BENCH_MB:-}" ]; then
	mb=$(( $(stat -c %s "$data") >> 20 ))
	copies=$(( (SONDE_BENCH_MB + mb - 1) / mb ))
	if [ "$copies" -gt 1 ]; then
		echo "repeating the ${mb} MB recording ${copies} times ..." >&2
		(cd "$repo" && go run ./bench/perf/repeat -n "$copies" "$data" "$work/big.data")
		data=$work/big.data
	fi
fi
sync "$data" # written back now, not during the rounds
samples=$(perf report --stats -i "$data" 2>/dev/null | awk '/SAMPLE events:/ {print $3; exit}')
size=$(du -m "$data" | cut -f1)
echo "recording: $samples samples, $size MB; $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)${SONDE_BENCH_RT:+; real-time priority}"
names=("sonde perf folded" "sonde perf folded --no-inline" "sonde perf folded, cold cache" "perf script --no-inline" "perf script" "cat perf.data > /dev/null")
cmds=(
	"$work/sonde perf folded -i $data"
	"$work/sonde perf folded --no-inline -i $data"
	"SONDE_CACHE_DIR=\$(mktemp -d -p $work) $work/sonde perf folded -i $data"
	"perf script --no-inline -i $data"
	"perf script -i $data"
	"cat $data"
)
cat "$data" >/dev/null # into the page cache
"$work/sonde" perf folded -i "$data" >/dev/null 2>&1 # and the persisted cache
"$work/sonde" perf folded --no-inline -i "$data" >/dev/null 2>&1
rt=()
[ -z "${SONDE_BENCH_RT:-}" ] || rt=(chrt -f 50)
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
declare -A walls cpus rss
for _ in $(seq "$runs"); do
	for i in "${!cmds[@]}"; do
		out=$( { "${rt[@]}" /usr/bin/time -f '%e %U %S %M' sh -c "${cmds[$i]} >/dev/null 2>/dev/null"; } 2>&1 | tail -1)
		read -r wall user sys kb <<<"$out"
		walls[$i]+="$wall "
		cpus[$i]+="$(awk -v u="$user" -v s="$sys" 'BEGIN {print u + s}') "
		rss[$i]=$(( kb > ${rss[$i]:-0} ? kb : ${rss[$i]:-0} ))
	done
done
printf '| %-32s | %8s | %8s | %8s | %12s | %11s |\n' command "wall s" "CPU s" "peak MB" "wall ÷ sonde" "CPU ÷ sonde"
printf '|%s|%s|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..34})" ---------- ---------- ---------- -------------- -------------
for i in "${!cmds[@]}"; do
	w=$(printf '%s\n' ${walls[$i]} | median)
	c=$(printf '%s\n' ${cpus[$i]} | median)
	[ "$i" -gt 0 ] || { bw=$w; bc=$c; }
	printf '| %-32s | %8s | %8s | %8d | %12.1f | %11.1f |\n' "${names[$i]}" "$w" "$c" $((rss[$i] / 1024)) \
		"$(awk -v w="$w" -v b="$bw" 'BEGIN {print w / b}')" "$(awk -v c="$c" -v b="$bc" 'BEGIN {print (b > 0) ? c / b : 0}')"
done
echo "sonde perf folded: $(awk -v n="$samples" -v w="$bw" 'BEGIN {printf "%.0f", n / w}') samples/s wall, $(awk -v n="$samples" -v c="$bc" 'BEGIN {printf "%.0f", n / c}') samples per CPU second"
