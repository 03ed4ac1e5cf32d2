#!/usr/bin/env bash
# The first `sonde stack` on a machine (issue 21): no persistent cache yet,
# so libc's compressed debug sections are inflated and its units indexed in
# the run, against eu-stack -i -s, which does that on every run. Measured on
# a live process of testdata/stk_threads.c with 8 threads (9 tasks), every
# command in a fresh process, interleaved run by run; medians of wall time
# and of CPU time (user+sys of the process and its threads: on the shared
# 2-vCPU machine the CPU column is the stable one).
#
#   bench/stack/first-run.sh [RUNS]
#
# SONDE=path measures that sonde instead of building this tree's;
# SONDE_BEFORE=path adds the same rows for another build ("before: ..."),
# interleaved with the others, for a before/after comparison in one run.
#
# Rows: sonde with an empty cache directory per run (the real first run: it
# also inflates the rest of the file's compressed sections, in parallel, and
# writes the cache file), with the cache off (SONDE_NO_CACHE=1: only what
# the stack needs is inflated), both with and without arguments (--no-args:
# eu-stack prints none), and with the cache warm.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
runs=${1:-9}
command -v eu-stack >/dev/null || { echo "please install: elfutils" >&2; exit 1; }

work=$(mktemp -d)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
if [ -n "${SONDE:-}" ]; then
	cp "$SONDE" "$work/sonde"
else
	(cd "$repo" && go build -o "$work/sonde" ./cmd/sonde)
fi
if [ -n "${SONDE_BEFORE:-}" ]; then
	cp "$SONDE_BEFORE" "$work/sonde-before"
fi
gcc -g -O2 -pthread -o "$work/threads" "$repo/testdata/stk_threads.c"
mkfifo "$work/fifo"
"$work/threads" threads 8 >"$work/fifo" &
pid=$!
read -r _ <"$work/fifo"
sleep 0.3
SONDE_CACHE_DIR="$work/warm" "$work/sonde" stack "$pid" >/dev/null 2>&1 || true

python3 - "$work" "$pid" "$runs" <<'PY'
import os, resource, statistics, subprocess, sys, time

work, pid, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
sonde = os.path.join(work, "sonde")
n = [0]
def fresh():
    n[0] += 1
    return {"SONDE_CACHE_DIR": os.path.join(work, "empty%d" % n[0])}
def sonde_rows(prefix, sonde, warm):
    return [
        (prefix + "sonde stack, empty cache (first run)", [sonde, "stack", pid], fresh),
        (prefix + "sonde stack --no-args, empty cache", [sonde, "stack", "--no-args", pid], fresh),
        (prefix + "sonde stack, SONDE_NO_CACHE=1", [sonde, "stack", pid], lambda: {"SONDE_NO_CACHE": "1"}),
        (prefix + "sonde stack --no-args, SONDE_NO_CACHE=1", [sonde, "stack", "--no-args", pid], lambda: {"SONDE_NO_CACHE": "1"}),
        (prefix + "sonde stack, warm cache", [sonde, "stack", pid], lambda: {"SONDE_CACHE_DIR": os.path.join(work, warm)}),
    ]
rows = sonde_rows("", sonde, "warm")
before = os.path.join(work, "sonde-before")
if os.path.exists(before):
    subprocess.run([before, "stack", pid], env=dict(os.environ, SONDE_CACHE_DIR=os.path.join(work, "warm-before")),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rows += sonde_rows("before: ", before, "warm-before")
rows.append(("eu-stack -i -s", ["eu-stack", "-i", "-s", "-p", pid], dict))
res = {r[0]: [] for r in rows}
for _ in range(runs):
    for name, cmd, env in rows:
        e = dict(os.environ, **env())
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(cmd, env=e, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t1 = time.perf_counter()
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        res[name].append(((t1 - t0) * 1000, (r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1000))
print("load average: %s; %d runs each, medians" % (" ".join(open("/proc/loadavg").read().split()[:3]), runs))
print()
print("| command | wall ms | CPU ms | wall / eu-stack's | CPU / eu-stack's |")
print("|---|---|---|---|---|")
euw = statistics.median(w for w, _ in res["eu-stack -i -s"])
eu = statistics.median(c for _, c in res["eu-stack -i -s"])
for name, _, _ in rows:
    w = statistics.median(x for x, _ in res[name])
    c = statistics.median(x for _, x in res[name])
    print("| %s | %.0f | %.0f | %.2f | %.2f |" % (name, w, c, w / euw, c / eu))
PY
