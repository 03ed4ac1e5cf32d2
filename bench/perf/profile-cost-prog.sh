#!/usr/bin/env bash
# What sampling costs a real program (bench/perf/profile-cost.sh does it for
# testdata/perf_spin.c): run COMMAND bare, under `perf record -F HZ
# --call-graph dwarf` and under `sonde profile -F HZ` (both copying 8 KiB of
# user stack per sample, perf's default), interleaved, RUNS times each. For
# each: the program's own CPU (user+sys of it and its children, in
# microseconds, by a small wait4 wrapper run inside the profiler), its wall
# time, and the whole run's CPU (profiler included); medians. The summary
# line compares the program's CPU under sonde with its CPU under perf.
#   bench/perf/profile-cost-prog.sh HZ RUNS COMMAND ARGS...
# SONDE=PATH uses that sonde instead of building this tree's; SONDE_ARGS adds
# arguments to sonde profile (e.g. "--stack-size 16384"); CPU=N runs every
# run, program and profiler, on CPU N only (taskset: fewer migrations, and the
# profiler's work shares the program's CPU, so it costs wall time, not the
# program's CPU time, in the same way for both profilers).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
hz=$1 runs=$2
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sonde=${SONDE:-}
if [ -z "$sonde" ]; then
	(cd "$repo" && CGO_ENABLED=0 go build -o "$work/sonde" ./cmd/sonde)
	sonde=$work/sonde
fi
# cputime OUT CMD...: runs CMD; writes "user+sys wall" seconds (from wait4's
# rusage, microseconds) to OUT. /usr/bin/time prints only hundredths.
cat >"$work/cputime.c" <<'C'
#include <stdio.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	pid_t pid = fork();
	if (pid == 0) {
		execvp(argv[2], argv + 2);
		_exit(127);
	}
	int st;
	struct rusage ru;
	if (pid < 0 || wait4(pid, &st, 0, &ru) < 0)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &b);
	FILE *f = fopen(argv[1], "w");
	if (!f)
		return 1;
	fprintf(f, "%.6f %.6f\n",
		ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6,
		(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
	fclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
C
gcc -O2 -o "$work/cputime" "$work/cputime.c"
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
# run NAME PREFIX...: one run; appends "own-cpu own-wall whole-cpu" to $work/res-NAME
run() {
	local name=$1
	shift
	local pin=()
	[ -n "${CPU:-}" ] && pin=(taskset -c "$CPU")
	"${pin[@]}" "$work/cputime" "$work/outer" "$@" "$work/cputime" "$work/inner" "${cmd[@]}" >/dev/null 2>&1
	read -r c e <"$work/inner"
	read -r oc _ <"$work/outer"
	echo "$c $e $oc" >>"$work/res-$name"
}
cmd=("$@")
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for _ in $(seq "$runs"); do
	run bare
	run perf perf record -q -e cpu-clock -F "$hz" --call-graph dwarf -o "$work/p.data" --
	# shellcheck disable=SC2086
	run sonde "$sonde" profile folded -F "$hz" ${SONDE_ARGS:-} -o "$work/s.folded" --
done
col() { awk -v c="$2" '{print $c}' "$work/res-$1" | median; }
b=$(col bare 1)
echo "load $load0 at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end; $(nproc) CPUs${CPU:+, every run on CPU $CPU only}; $hz Hz; $runs runs each, interleaved, medians; command: ${cmd[*]}"
printf '| %-32s | %10s | %8s | %8s | %14s |\n' run "own CPU s" added "wall s" "whole CPU s"
printf '| --- | ---: | ---: | ---: | ---: |\n'
for n in bare perf sonde; do
	c=$(col $n 1)
	added=$(awk -v x="$c" -v b="$b" 'BEGIN {printf "%+.1f%%", 100*(x-b)/b}')
	[ $n = bare ] && added=-
	label=$n
	[ $n = perf ] && label="perf record --call-graph dwarf"
	[ $n = sonde ] && label="sonde profile ${SONDE_ARGS:-}"
	printf '| %-32s | %10.4f | %8s | %8.3f | %14.4f |\n' "$label" "$c" "$added" "$(col $n 2)" "$(col $n 3)"
done
p=$(col perf 1) s=$(col sonde 1)
awk -v s="$s" -v p="$p" -v b="$b" 'BEGIN {
	printf "summary: the program'"'"'s CPU under sonde profile is %.3f× its CPU under perf record (sonde adds %+.1f%% to the bare run, perf %+.1f%%); under 1.00× sonde costs the program less\n", s/p, 100*(s-b)/b, 100*(p-b)/b }'
