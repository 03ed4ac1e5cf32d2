#!/usr/bin/env bash
# What sampling costs the sampled program: testdata/perf_spin.c's "rounds N"
# mode (a CPU-bound C program doing fixed work) run bare, under `perf record
# -F HZ --call-graph dwarf` and under `sonde profile -F HZ` (8 KiB stack copies
# too), interleaved, RUNS times each, by bench/perf/profile-cost-prog.sh:
# medians of the program's own CPU and wall time, the whole run's CPU, and
# a summary line: the program's CPU under sonde ÷ under perf record.
#   bench/perf/profile-cost.sh [HZ [ROUNDS [RUNS]]]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
hz=${1:-1000}
rounds=${2:-300000}
runs=${3:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O2 -g -o "$work/perf_spin" "$repo/testdata/perf_spin.c"
"$here/profile-cost-prog.sh" "$hz" "$runs" "$work/perf_spin" rounds "$rounds"
