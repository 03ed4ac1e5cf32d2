#!/usr/bin/env bash
# All-thread backtrace benchmark: `sonde stack` against gdb's
# `thread apply all bt` and eu-stack (with inline frames and lines, `-i -s`,
# and names only), in the same run, on live processes and on gcore'd cores of
# three targets built from testdata/stk_threads.c:
#
#   threads-8    8 worker threads blocked in libc (9 tasks)
#   threads-64   64 worker threads (65 tasks)
#   deep-300     a 300-deep recursion, -O2 -fomit-frame-pointer (1 task)
#
#   bench/stack/run.sh [RUNS]
#
# Every command runs in a fresh process (cold: start-up, attach, reading
# symbols included). sonde runs twice: as installed (its cache of inflated
# debug files warm after the first run, see session/debugcache.go) and with
# SONDE_CACHE_DIR=off (inflating compressed debug sections on every run).
# Exit codes are ignored (eu-stack exits 1 when any thread's walk ends in an
# error). hyperfine measures when present (installed if missing and we are root),
# else a repeat loop; the table shows medians and the ratio to sonde.
# Then the steady-state (attached, warm caches) go benchmarks through the
# session (skip them with NO_GO_BENCH=1).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
runs=${1:-20}

need() { command -v "$1" >/dev/null 2>&1; }
install() {
	if need apt-get && [ "$(id -u)" = 0 ]; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y "$@" >/dev/null 2>&1 ||
			{ apt-get update >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y "$@" >/dev/null; }
	else
		echo "please install: $*" >&2
		return 1
	fi
}
need gdb || install gdb
need eu-stack || install elfutils
need gcc || install gcc
need hyperfine || install hyperfine || true
need python3 || install python3

work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

# SONDE=/path/to/sonde uses a prebuilt binary instead of building this checkout.
if [ -n "${SONDE:-}" ]; then
	cp "$SONDE" "$work/sonde"
else
	(cd "$repo" && go build -o "$work/sonde" ./cmd/sonde)
fi
sonde=$work/sonde
src=$repo/testdata/stk_threads.c
gcc -g -O2 -pthread -o "$work/threads" "$src"
gcc -g -O2 -fomit-frame-pointer -pthread -o "$work/deep" "$src"

start() { # name exe args...: starts a target, waits for "ready", records its pid
	local name=$1 exe=$2
	shift 2
	mkfifo "$work/$name.fifo"
	"$exe" "$@" >"$work/$name.fifo" &
	local pid=$!
	pids+=("$pid")
	read -r _ <"$work/$name.fifo"
	sleep 0.3 # let every thread reach its system call
	echo "$pid" >"$work/$name.pid"
	gcore -o "$work/$name.core" "$pid" >/dev/null 2>&1
	mv "$work/$name.core.$pid" "$work/$name.core"
}
start threads-8 "$work/threads" threads 8
start threads-64 "$work/threads" threads 64
start deep-300 "$work/deep" deep 300

# Warm sonde's debug-file cache once (what every run after the first sees).
"$sonde" stack "$(cat "$work/threads-8.pid")" >/dev/null

python3 - "$work" "$runs" <<'PY'
import json, os, shlex, shutil, statistics, subprocess, sys, time

work, runs = sys.argv[1], int(sys.argv[2])
sonde = os.path.join(work, "sonde")
hyperfine = shutil.which("hyperfine")

def frames(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True).stdout
    return sum(1 for l in out.splitlines() if l.startswith("#"))

def median_ms(cmd, env=None):
    if hyperfine:
        js = os.path.join(work, "hf.json")
        args = [hyperfine, "-N", "-i", "-w", "2", "-r", str(runs), "--export-json", js]
        if env:
            args = [hyperfine, "-i", "-w", "2", "-r", str(runs), "--export-json", js]
            args.append(" ".join(f"{k}={v}" for k, v in env.items()) + " " + shlex.join(cmd))
        else:
            args.append(shlex.join(cmd))
        subprocess.run(args, capture_output=True, check=True)
        r = json.load(open(js))["results"][0]
        return statistics.median(r["times"]) * 1000
    ts = []
    e = dict(os.environ, **(env or {}))
    for i in range(runs + 2):
        t = time.perf_counter()
        subprocess.run(cmd, capture_output=True, env=e)
        if i >= 2:
            ts.append((time.perf_counter() - t) * 1000)
    return statistics.median(ts)

rows = []
for name, exe in [("threads-8", "threads"), ("threads-64", "threads"), ("deep-300", "deep")]:
    pid = open(os.path.join(work, name + ".pid")).read().strip()
    core = os.path.join(work, name + ".core")
    exe = os.path.join(work, exe)
    for mode in ("live", "core"):
        if mode == "live":
            tools = {
                "sonde stack": [sonde, "stack", pid],
                "sonde stack, no cache": ([sonde, "stack", pid], {"SONDE_CACHE_DIR": "off"}),
                "gdb thread apply all bt": ["gdb", "-nx", "-batch", "-ex", "thread apply all bt", "-p", pid],
                "eu-stack -i -s": ["eu-stack", "-i", "-s", "-p", pid],
                "eu-stack (names only)": ["eu-stack", "-p", pid],
            }
        else:
            tools = {
                "sonde stack": [sonde, "stack", "--core", core, "--exe", exe],
                "sonde stack, no cache": ([sonde, "stack", "--core", core, "--exe", exe], {"SONDE_CACHE_DIR": "off"}),
                "gdb thread apply all bt": ["gdb", "-nx", "-batch", "-ex", "thread apply all bt", exe, core],
                "eu-stack -i -s": ["eu-stack", "-i", "-s", "--core", core, "-e", exe],
                "eu-stack (names only)": ["eu-stack", "--core", core, "-e", exe],
            }
        res = {}
        for tool, cmd in tools.items():
            env = None
            if isinstance(cmd, tuple):
                cmd, env = cmd
            res[tool] = median_ms(cmd, env)
        nframes = frames(tools["sonde stack"])
        base = res["sonde stack"]
        for tool, ms in res.items():
            rows.append((name, mode, nframes, tool, ms, ms / base))

print("| target | mode | sonde frames | tool | median ms | × sonde |")
print("|---|---|---|---|---|---|")
for name, mode, nf, tool, ms, ratio in rows:
    print(f"| {name} | {mode} | {nf} | {tool} | {ms:.1f} | {ratio:.2f} |")
PY

if [ -z "${NO_GO_BENCH:-}" ]; then
	echo
	echo "Steady state (attached once, warm caches):"
	(cd "$repo" && go test -run XXX -bench 'BenchmarkStack' -benchtime 2s ./session ./unwind/snapshot ./unwind/self 2>&1 | grep -E 'Benchmark|ok|FAIL')
fi
