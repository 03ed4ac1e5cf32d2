#!/usr/bin/env bash
# What sampling costs the sampled program: testdata/perf_spin.c's "rounds N"
# mode does fixed work and prints its own CPU seconds; run it bare, under `perf record -F HZ
# --call-graph dwarf`, and under `sonde profile -F HZ` (stack copies too),
# alternating, RUNS times each; medians and the added CPU over the bare run.
#   bench/perf/profile-cost.sh [HZ [ROUNDS [RUNS]]]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
hz=${1:-1000}
rounds=${2:-300000}
runs=${3:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O2 -g -o "$work/work" "$repo/testdata/perf_spin.c"
(cd "$repo" && CGO_ENABLED=0 go build -o "$work/sonde" ./cmd/sonde)
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
bare=() perfr=() sonde=()
for _ in $(seq "$runs"); do
	bare+=("$("$work/work" rounds "$rounds")")
	perfr+=("$(perf record -q -e cpu-clock -F "$hz" --call-graph dwarf -o "$work/p.data" -- "$work/work" rounds "$rounds" 2>/dev/null)")
	sonde+=("$("$work/sonde" profile folded -F "$hz" -o "$work/s.folded" -- "$work/work" rounds "$rounds" 2>/dev/null)")
done
b=$(printf '%s\n' "${bare[@]}" | median)
p=$(printf '%s\n' "${perfr[@]}" | median)
s=$(printf '%s\n' "${sonde[@]}" | median)
echo "load $(cut -d' ' -f1-3 /proc/loadavg); $hz Hz; $rounds rounds; $runs runs each, medians of the program's own CPU seconds"
printf '| %-36s | %8s | %8s |\n' run "CPU s" "added"
printf '| %-36s | %8s | %8s |\n' "bare" "$b" "-"
printf '| %-36s | %8s | %7.1f%% |\n' "perf record --call-graph dwarf" "$p" "$(awk -v x="$p" -v b="$b" 'BEGIN {print 100*(x-b)/b}')"
printf '| %-36s | %8s | %7.1f%% |\n' "sonde profile" "$s" "$(awk -v x="$s" -v b="$b" 'BEGIN {print 100*(x-b)/b}')"
