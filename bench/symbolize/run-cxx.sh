#!/usr/bin/env bash
# The C++ case of the symbolization benchmark: a generated program heavy in
# templates, lambdas and inlined standard-library code (gencpp.py), built
# with g++ -O2 -g, then run.sh on it (sonde, addr2line and llvm-symbolizer
# on the same random addresses, same run).
#
#   bench/symbolize/run-cxx.sh [N_ADDRESSES] [RUNS] [MODULES]
#
# MODULES (default 24) sets the size: 24 gives an 11 MB executable with
# 4.5 MB of .debug_info and 1,100 mangled function symbols, most of them
# template instances with 100-250 character names. The build (40 s of one
# core) is kept in $SONDE_BENCH_CXX_DIR (default $TMPDIR/sonde-bench-cxx-MODULES)
# and reused.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
n=${1:-100000}
runs=${2:-5}
modules=${3:-24}
dir=${SONDE_BENCH_CXX_DIR:-${TMPDIR:-/tmp}/sonde-bench-cxx-$modules}
bin=$dir/templates
command -v g++ >/dev/null || { echo "please install: g++" >&2; exit 1; }
if [ ! -x "$bin" ]; then
	mkdir -p "$dir"
	python3 "$here/gencpp.py" "$dir/templates.cc" "$modules"
	g++ -O2 -g -o "$bin.tmp" "$dir/templates.cc"
	mv "$bin.tmp" "$bin"
fi
echo "C++ program: $bin (g++ -O2 -g, $modules generated modules; $(g++ --version | head -1))"
NO_GO_BENCH=${NO_GO_BENCH:-1} "$here/run.sh" "$bin" "$n" "$runs"
