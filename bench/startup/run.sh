#!/usr/bin/env bash
# Start-up cost of sonde's verbs, several binaries interleaved:
#
#   bench/startup/run.sh ROUNDS NAME=BINARY... -- CMD-ARGS...
#
# e.g. bench/startup/run.sh 21 base=/tmp/a/sonde new=/tmp/b/sonde -- version
#
# In each of ROUNDS rounds every binary runs CMD-ARGS once (so a machine
# whose load changes weighs on all alike) under `perf stat -e
# task-clock,page-faults`; the table shows per binary the median and the
# quartiles of its CPU time (task-clock, ms) and of its page faults, and the
# median wall time (ms). Output of the commands goes to /dev/null. An
# argument "{}" in CMD-ARGS is passed as is (no substitution).
set -euo pipefail
rounds=$1
shift
names=() bins=()
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do
	names+=("${1%%=*}")
	bins+=("${1#*=}")
	shift
done
shift
command -v perf >/dev/null || { echo "bench/startup: perf is not installed (apt-get install linux-perf)" >&2; exit 1; }
out=$(mktemp)
trap 'rm -f "$out" "$out.st"' EXIT
for ((r = 0; r < rounds; r++)); do
	for i in "${!bins[@]}"; do
		t0=$(date +%s%N)
		perf stat -x, -o "$out.st" -e task-clock,page-faults "${bins[$i]}" "$@" >/dev/null 2>&1 || true
		t1=$(date +%s%N)
		cpu=$(awk -F, '/task-clock/ {print $1}' "$out.st")
		pf=$(awk -F, '/page-faults/ {print $1}' "$out.st")
		echo "${names[$i]} $cpu $pf $(((t1 - t0) / 1000))" >>"$out"
	done
done
echo "load $(cut -d' ' -f1-3 /proc/loadavg); $rounds rounds; command: $*"
python3 - "$out" "${names[@]}" <<'PY'
import sys, statistics
rows = [l.split() for l in open(sys.argv[1])]
def q(v):
    v = sorted(v)
    return v[len(v) // 4], statistics.median(v), v[(3 * len(v)) // 4]
print("| binary | CPU ms (q1 / median / q3) | page faults (q1 / median / q3) | wall ms (median) |")
print("|---|---:|---:|---:|")
for n in sys.argv[2:]:
    r = [x for x in rows if x[0] == n]
    c = q([float(x[1]) for x in r]); p = q([float(x[2]) for x in r]); w = statistics.median([float(x[3]) / 1000 for x in r])
    print(f"| {n} | {c[0]:.1f} / **{c[1]:.1f}** / {c[2]:.1f} | {p[0]:.0f} / **{p[1]:.0f}** / {p[2]:.0f} | {w:.1f} |")
PY
