#!/usr/bin/env bash
# DAP adapter benchmark: `sonde dap` against lldb-vscode-14 (Debian's lldb),
# driven by the same client (testdata/dapclient/session.js --mode bench,
# Microsoft's DebugClient) on the same programs (testdata/dapclient_prog.c, .cc,
# .rs at -O0), in the same run, alternating adapters run by run:
#
#   launch->stop  from the launch request (initialized, setBreakpoints and
#                 configurationDone included) to the first breakpoint's
#                 stopped event
#   round         at that stop: stackTrace, then scopes of the top frame,
#                 then variables of its Locals (what an editor asks on a stop)
#   step round    the same round at the stop of a `next` from there (warm)
#
#   bench/dap/run.sh [RUNS]        (default 11; SONDE=/path/to/sonde to use a built one;
#                                   LANGS="c" for some of c, cpp, rust)
#
# Every session is a new adapter process. One warm-up session per adapter
# and program first (page cache, sonde's debug-file cache). Prints medians
# and the ratio sonde / lldb-vscode (goal: <= 0.5).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
runs=${1:-11}

"$repo/scripts/setup" # node, npm, lldb, rustc and the client's npm packages
lock="$repo/testdata/dapclient/package-lock.json"
export NODE_PATH="${XDG_CACHE_HOME:-$HOME/.cache}/sonde-npm/$(sha256sum "$lock" | cut -c1-16)/node_modules"
lldb=$(command -v lldb-vscode-14 || command -v lldb-vscode)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -n "${SONDE:-}" ]; then
	cp "$SONDE" "$work/sonde"
else
	(cd "$repo" && go build -o "$work/sonde" ./cmd/sonde)
fi
rustc=$(command -v rustc || echo "$HOME/.cargo/bin/rustc")
gcc -g -O0 -o "$work/dapclient_prog_c" "$repo/testdata/dapclient_prog.c"
g++ -g -O0 -o "$work/dapclient_prog_cc" "$repo/testdata/dapclient_prog.cc"
"$rustc" -g -C opt-level=0 -o "$work/dapclient_prog_rs" "$repo/testdata/dapclient_prog.rs"

session() { # lang program source adapter...: one timed session, its BENCH line
	local lang=$1 prog=$2 src=$3
	shift 3
	(cd "$work" && node "$repo/testdata/dapclient/session.js" --mode bench --runs 1 \
		--program "$prog" --source "$src" --lang "$lang" -- "$@") | grep '^BENCH '
}

out=$work/bench.jsonl
for spec in "c dapclient_prog_c dapclient_prog.c" "cpp dapclient_prog_cc dapclient_prog.cc" "rust dapclient_prog_rs dapclient_prog.rs"; do
	set -- $spec
	lang=$1 prog=$work/$2 src=$repo/testdata/$3
	case " ${LANGS:-c cpp rust} " in *" $lang "*) ;; *) continue ;; esac
	session "$lang" "$prog" "$src" "$work/sonde" dap >/dev/null
	session "$lang" "$prog" "$src" "$lldb" >/dev/null
	for ((i = 0; i < runs; i++)); do
		session "$lang" "$prog" "$src" "$work/sonde" dap | sed "s/^BENCH /sonde /" >>"$out"
		session "$lang" "$prog" "$src" "$lldb" | sed "s/^BENCH /lldb /" >>"$out"
	done
done

node - "$out" <<'JS'
const fs = require('fs');
const rows = {};
for (const line of fs.readFileSync(process.argv[2], 'utf8').trim().split('\n')) {
	const i = line.indexOf(' ');
	const who = line.slice(0, i), r = JSON.parse(line.slice(i + 1));
	const k = `${r.lang}/${who}`;
	(rows[k] = rows[k] || []).push(r.all[0]);
}
const med = xs => { const s = xs.slice().sort((a, b) => a - b), n = s.length; return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2; };
console.log('| program | adapter | runs | launch->stop ms | round ms (first stop) | round ms (after a step) | launch->stop x lldb | round x lldb | step round x lldb |');
console.log('|---|---|---|---|---|---|---|---|---|');
const detail = [];
for (const lang of ['c', 'cpp', 'rust']) {
	const l = rows[`${lang}/lldb`], s = rows[`${lang}/sonde`];
	if (!l || !s) continue;
	const m = (rs, k) => med(rs.map(r => r[k]));
	const L = ['launchToStop', 'round', 'stepRound'].map(k => m(l, k));
	const S = ['launchToStop', 'round', 'stepRound'].map(k => m(s, k));
	console.log(`| ${lang} | sonde dap | ${s.length} | ${S[0].toFixed(1)} | ${S[1].toFixed(1)} | ${S[2].toFixed(1)} | ${(S[0] / L[0]).toFixed(2)} | ${(S[1] / L[1]).toFixed(2)} | ${(S[2] / L[2]).toFixed(2)} |`);
	console.log(`| ${lang} | lldb-vscode-14 | ${l.length} | ${L[0].toFixed(1)} | ${L[1].toFixed(1)} | ${L[2].toFixed(1)} | 1.00 | 1.00 | 1.00 |`);
	for (const [who, rs] of [['sonde dap', s], ['lldb-vscode-14', l]]) {
		for (const at of ['first', 'step']) {
			detail.push(`| ${lang} | ${who} | ${at} | ${['stackTrace', 'scopes', 'variables'].map(k => med(rs.map(r => r[at][k])).toFixed(1)).join(' | ')} |`);
		}
	}
}
console.log('\nthe client\'s floor (3 × the median `threads` round trip at the same stop) and each adapter\'s own share of the round after a step (the round minus the floor), median ms:\n');
console.log('| program | floor: sonde / lldb-vscode | step round share: sonde / lldb-vscode | share ratio |');
console.log('|---|---|---|---|');
for (const lang of ['c', 'cpp', 'rust']) {
	const l = rows[`${lang}/lldb`], s = rows[`${lang}/sonde`];
	if (!l || !s || l[0].floor === undefined) continue;
	const f = rs => med(rs.map(r => r.floor)), sh = rs => med(rs.map(r => r.stepRound - r.floor));
	console.log(`| ${lang} | ${f(s).toFixed(2)} / ${f(l).toFixed(2)} | ${sh(s).toFixed(2)} / ${sh(l).toFixed(2)} | ${(sh(s) / sh(l)).toFixed(2)} |`);
}
console.log('\neach adapter\'s CPU (all its threads, user+sys) from the stop of the `next` to the end of the round after it, median ms (less moved by the load than wall times):\n');
console.log('| program | sonde dap | lldb-vscode-14 | ratio |');
console.log('|---|---|---|---|');
for (const lang of ['c', 'cpp', 'rust']) {
	const l = rows[`${lang}/lldb`], s = rows[`${lang}/sonde`];
	if (!l || !s || l[0].step.cpu === undefined) continue;
	const c = rs => med(rs.map(r => r.step.cpu));
	console.log(`| ${lang} | ${c(s).toFixed(2)} | ${c(l).toFixed(2)} | ${(c(s) / c(l)).toFixed(2)} |`);
}
console.log('\nmedian ms of each request of the round:\n');
console.log('| program | adapter | stop | stackTrace | scopes | variables |');
console.log('|---|---|---|---|---|---|');
for (const d of detail) console.log(d);
JS
