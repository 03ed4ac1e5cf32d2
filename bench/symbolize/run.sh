#!/usr/bin/env bash
# Symbolization benchmark for `sonde symbolize` against binutils addr2line and
# llvm-symbolizer, in the same run, on the same 100,000 random code addresses
# of a large optimized shared library with DWARF 5 and inlined calls.
#
#   bench/symbolize/run.sh [LIBRARY] [N_ADDRESSES] [RUNS]
#
# LIBRARY defaults to Debian's libpython3.11d.so.1.0 (package libpython3.11-dbg,
# installed when missing). Each tool runs RUNS times (default 5) in a fresh
# process, start-up included; the table shows the median wall time, the
# median CPU time (user+sys: the machines are shared), addresses per second by
# both, and the maximum resident set size. Then the go test benchmarks of
# the library API (skip them with NO_GO_BENCH=1).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
lib=${1:-/usr/lib/x86_64-linux-gnu/libpython3.11d.so.1.0}
n=${2:-100000}
runs=${3:-5}

need() { command -v "$1" >/dev/null 2>&1; }
install() {
	if need apt-get && [ "$(id -u)" = 0 ]; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y "$@" >/dev/null
	else
		echo "please install: $*" >&2
		exit 1
	fi
}
[ -e "$lib" ] || install libpython3.11-dbg
need addr2line || install binutils
need llvm-symbolizer || install llvm
[ -x /usr/bin/time ] || install time
need python3 || install python3

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# SONDE=/path/to/sonde uses a prebuilt binary instead of building this checkout.
if [ -n "${SONDE:-}" ]; then
	cp "$SONDE" "$work/sonde"
else
	(cd "$repo" && go build -o "$work/sonde" ./cmd/sonde)
fi

python3 - "$lib" "$n" "$runs" "$work" <<'PY'
import os, random, statistics, subprocess, sys

lib, n, runs, work = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
sonde = os.path.join(work, "sonde")

# Random addresses inside function symbols (fixed seed: every run and every
# tool sees the same addresses).
out = subprocess.run(["readelf", "-sW", lib], capture_output=True, text=True, check=True).stdout
funcs = set()
for line in out.splitlines():
    p = line.split()
    if len(p) >= 8 and p[3] == "FUNC" and p[6] != "UND":
        v, s = int(p[1], 16), int(p[2], 16) if p[2].startswith("0x") else int(p[2])
        if v and s:
            funcs.add((v, s))
funcs = sorted(funcs)
rng = random.Random(1)
addrs = os.path.join(work, "addrs.txt")
with open(addrs, "w") as f:
    for _ in range(n):
        v, s = rng.choice(funcs)
        f.write("0x%x\n" % (v + rng.randrange(s)))

# sonde keeps what it derives from the file (unit index, demangled names,
# inflated sections) in its persistent cache: rows without a note run with
# that cache warm (filled by one untimed run first, in a cache directory of
# this benchmark's own); "first run" rows start every run with an empty one,
# as the first run on a machine does (the sh wrapper that makes the empty
# directory is timed too: ~1 ms).
os.environ["SONDE_CACHE_DIR"] = os.path.join(work, "pcache")
subprocess.run([sonde, "symbolize", "-e", lib, "-f", "-i", "-C"], stdin=open(addrs), stdout=subprocess.DEVNULL)
first_run = ["sh", "-c", 'SONDE_CACHE_DIR=$(mktemp -d -p "$W") exec "$0" "$@"']
os.environ["W"] = work

tools = [
    ("sonde symbolize -f -i -C", [sonde, "symbolize", "-e", lib, "-f", "-i", "-C"], True),
    ("sonde symbolize -f -i -C, first run", first_run + [sonde, "symbolize", "-e", lib, "-f", "-i", "-C"], True),
    ("addr2line -f -i -C", ["addr2line", "-e", lib, "-f", "-i", "-C"], True),
    ("llvm-symbolizer (inlines)", ["llvm-symbolizer", "--obj=" + lib, "--demangle", "--inlines"], True),
    ("sonde symbolize -f -C", [sonde, "symbolize", "-e", lib, "-f", "-C"], False),
    ("addr2line -f -C", ["addr2line", "-e", lib, "-f", "-C"], False),
    ("llvm-symbolizer --no-inlines", ["llvm-symbolizer", "--obj=" + lib, "--demangle", "--no-inlines"], False),
]

def run(cmd):
    with open(addrs) as stdin, open(os.path.join(work, "out"), "w") as stdout:
        r = subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M"] + cmd, stdin=stdin, stdout=stdout,
                           stderr=subprocess.PIPE, text=True)
    last = r.stderr.strip().splitlines()[-1].split()
    wall, user, sys_, rss = float(last[0]), float(last[1]), float(last[2]), int(last[3])
    return wall, user + sys_, rss

print("library: %s (%d bytes), %d addresses, median of %d runs" % (lib, os.path.getsize(lib), n, runs))
print("load average at start: %s" % open("/proc/loadavg").read().split()[:3])
print()
print("| tool | inline frames | wall s | CPU s | addr/s (wall) | addr/s (CPU) | max RSS MB |")
print("|---|---|---|---|---|---|---|")
# Interleave the tools run by run so that load changes hit all of them alike.
results = {name: [] for name, _, _ in tools}
for _ in range(runs):
    for name, cmd, _ in tools:
        results[name].append(run(cmd))
for name, cmd, inl in tools:
    rs = results[name]
    wall = statistics.median(r[0] for r in rs)
    cpu = statistics.median(r[1] for r in rs)
    rss = max(r[2] for r in rs) / 1024
    print("| %s | %s | %.2f | %.2f | %.0f k | %.0f k | %.0f |" % (
        name, "yes" if inl else "no", wall, cpu, n / wall / 1000, n / max(cpu, 1e-3) / 1000, rss))

# The persistent cache must not change an answer.
outs = []
for cmd in (tools[0][1], tools[1][1]):
    with open(addrs) as stdin:
        outs.append(subprocess.run(cmd, stdin=stdin, capture_output=True).stdout)
print()
print("sonde's output with a warm and an empty cache: %s" % ("identical" if outs[0] == outs[1] else "DIFFERENT"))
PY

# Warm and cold lookups through the library API, on the same library.
if [ -z "${NO_GO_BENCH:-}" ]; then
	echo
	echo "go test -bench (library API; addr/cpu-s divides by process CPU time):"
	(cd "$repo" && SONDE_BENCH_LIB="$lib" go test ./symbols -run XXX \
		-bench 'LookupWarm$|LookupCold|FirstLookup' -benchtime 2s 2>&1 | grep -E '^Benchmark')
fi
