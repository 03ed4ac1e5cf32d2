// trial6.js drives `sonde dap` with Microsoft's DebugClient through programs
// no sonde test was written for (the sixth real-program trial,
// bench/dap/REAL-PROGRAMS.md): Debian's lz4 1.9.4 (C: its command line
// compressing a file; a core while it reads a pipe), a report printer over
// Debian's fmt 9.1.0 (C++: templates, unions, function pointers; a core
// killed mid-work) and a Rust program over Debian's itertools 0.10.3 (a
// table of fn pointers, enums, Vec, HashMap; a core of its panic built
// with panic=abort). Every stop's watches and locals are compared with
// gdb's print and info locals at the same stop (gdb run by this script on
// the same program, or on the same core).
//
//	node trial6.js --mode lz4|lz4core|fmt|fmtcore|rust|rustcore --dir BUILD --src SRCDIR [--verbose] -- ADAPTER [ARGS...]
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const cp = require('child_process');
const shared = require('./dapshared');
const { Failure, Skip, show } = shared;

const { opt, check, must, Session, lineOf, counts } = shared.trialHarness('trial6.js', 'lz4|lz4core|fmt|fmtcore|rust|rustcore');
function known(what) { console.log(`KNOWN ${what}`); }
const { coreSession, start, stop, step, vars, locals, evalFull, base, where, valOf } = shared.trialSteps(must, 'sonde-trial6', 60, Session);

// ---- gdb at the same stop ----------------------------------------------------------

// gdbStop runs program under gdb to the stop breaks reach (after skip
// continues), prints each of exprs in frame 0 and each of frames' info
// locals and info args; or reads a core (core set, breaks none).
function gdbStop({ program, args = [], cwd, breaks = [], skip = 0, exprs = [], exprFrame = 0, frames = [], core, bt = 'bt' }) {
	// gdb gives the program LINES and COLUMNS, and its startup shell a PWD
	// of the directory: without them the program's stack is where sonde's
	// launch puts it.
	const g = ['-nx', '-batch', '-ex', 'set width 0', '-ex', 'set print frame-arguments none', '-ex', 'set confirm off', '-ex', 'set startup-with-shell off', '-ex', 'unset environment LINES', '-ex', 'unset environment COLUMNS'];
	for (const b of breaks) g.push('-ex', b);
	if (!core) {
		g.push('-ex', 'run');
		for (let i = 0; i < skip; i++) g.push('-ex', 'continue');
	}
	g.push('-ex', 'echo @@bt\\n', '-ex', bt);
	if (exprFrame) g.push('-ex', `frame ${exprFrame}`);
	for (const e of exprs) g.push('-ex', 'echo @@expr\\n', '-ex', `print ${e}`);
	for (const n of frames) g.push('-ex', `echo @@frame ${n}\\n`, '-ex', `frame ${n}`, '-ex', 'info locals', '-ex', 'info args');
	const argv = core ? [...g, program, core] : [...g, '--args', program, ...args];
	// rust-gdb: gdb with Rust's printers (Vec(size=3), as sonde's summaries);
	// the variables rustup's proxy sets for it would move the program's
	// stack, so the program gets the environment sonde's launch gives it.
	if (rustNames) {
		const env = [];
		for (const v of ['CARGO_HOME', 'LD_LIBRARY_PATH', 'PYTHONPATH', 'RUSTUP_HOME', 'RUSTUP_TOOLCHAIN', 'RUSTUP_TOOLCHAIN_SOURCE', 'RUST_RECURSION_COUNT', '_']) {
			env.push('-ex', process.env[v] === undefined ? `unset environment ${v}` : `set environment ${v}=${process.env[v]}`);
		}
		g.splice(g.indexOf('set confirm off') + 1, 0, ...env);
	}
	const r = cp.spawnSync(rustNames && hasRustGdb() ? 'rust-gdb' : 'gdb', argv, { encoding: 'utf8', timeout: 180000, cwd });
	if (r.error) throw new Skip(`gdb: ${r.error.message}`);
	const out = r.stdout.split('\n');
	const res = { frames: [], exprs: [], vals: {} };
	let cur = null, mode = '';
	for (const l of out) {
		let m;
		if (l === '@@bt') { mode = 'bt'; continue; }
		if (l === '@@expr') { mode = 'expr'; continue; }
		if ((m = /^@@frame (\d+)$/.exec(l))) { mode = 'frame'; cur = res.vals[m[1]] = {}; continue; }
		if (mode === 'bt' && (m = /^#(\d+)\s+(?:0x[0-9a-f]+ in )?(.*?) \((?:[A-Za-z_0-9]+=\.\.\.(?:, )?)*\)(?: at (\S+):(\d+)| from \S+)?$/.exec(l))) {
			res.frames.push({ func: m[2], file: m[3] ? path.basename(m[3]) : '', line: m[4] ? parseInt(m[4], 10) : 0 });
		} else if (mode === 'expr') {
			if ((m = /^\$\d+ = (.*)$/.exec(l))) res.exprs.push(m[1]);
			else if (/^(No symbol|Cannot|There is no|Attempt|A syntax)/.test(l)) res.exprs.push(`<gdb error ${l}>`);
		} else if (mode === 'frame' && (m = /^([A-Za-z_][A-Za-z_0-9]*) = (.*)$/.exec(l))) {
			cur[m[1]] = m[2];
		}
	}
	if (res.exprs.length !== exprs.length) throw new Failure(`gdb printed ${res.exprs.length} of ${exprs.length} expressions:\n${r.stdout}\n${r.stderr}`);
	return res;
}

function hasRustGdb() { return cp.spawnSync('sh', ['-c', 'command -v rust-gdb']).status === 0; }

// compareWatches evaluates exprs in frame f and compares each with gdb's
// print: a pointer's "(type) " before its value is the DAP type.
async function compareWatches(s, frameId, exprs, gdbVals, label) {
	for (let i = 0; i < exprs.length; i++) {
		const got = await evalFull(s, frameId, exprs[i]);
		let want = gdbVals[i], wantType = '';
		const m = /^\((.*?)\) (0x[0-9a-f]+|NULL)/.exec(want);
		const r = /^\(([^()]*&&?)\) (@0x[0-9a-f]+.*)$/.exec(want);
		const opt1 = /^core::option::Option<.*>::(Some\(.*\)|None)$/.exec(want);
		if (rustNames && opt1 && got.result === opt1[1]) {
			// The DAP summary of a Rust enum stays short (fifth round).
			known(`${label}: watch ${exprs[i]}: ${got.result} for rust-gdb's ${want}`);
			continue;
		}
		if (m && !got.result.startsWith('(')) {
			want = want.slice(m[1].length + 3);
			wantType = m[1];
		} else if (r) {
			// gdb prints a reference as (T &) @ADDR: VALUE: the DAP value
			// is @ADDR: VALUE, its type T & (until session 20 sonde gave
			// the referent, typed T).
			want = r[2];
			wantType = r[1];
		}
		check(got.result === want && (wantType === '' || got.type === wantType), `${label}: watch ${exprs[i]} = ${gdbVals[i]} (gdb)`,
			`sonde ${show(got.result)} type ${show(got.type)}`);
	}
}

// compareLocals compares the one-line values of gdb's info locals and
// info args of frame n with sonde's Locals and Arguments.
async function compareLocals(s, fr, n, gvals, label, skipNames = []) {
	const v = await locals(s, fr[n].id);
	const diffs = [];
	let compared = 0;
	for (const [name, want] of Object.entries(gvals || {})) {
		// Function-static variables (__PRETTY_FUNCTION__) are not among
		// sonde's locals (bench/dap/REAL-PROGRAMS.md, fourth round), nor the
		// compiler's artificial ones (a range-for's __for_begin).
		if (skipNames.includes(name) || /^__(PRETTY_FUNCTION|func|FUNCTION)__$/.test(name) || /^__for_(range|begin|end)$/.test(name) || /[{}]|<repeats/.test(want)) continue;
		compared++;
		const got = valOf(v, name);
		if (want === '<optimized out>' && got !== want && !got.startsWith('<')) {
			// fmt's FMT_INLINE functions are always_inline even at -O0:
			// in those inline frames gdb 13 reads no location for the
			// locals (p, begin, end); sonde reads them from the inlined
			// scope's DIEs, and they are right (begin is the format
			// string the caller passed, end begin plus its length).
			known(`${label}: frame ${n} ${name}: gdb <optimized out>, sonde ${got.slice(0, 60)}`);
			continue;
		}
		const sa = /^0x(7ff[0-9a-f]+)$/.exec(got), ga = /^0x(7ff[0-9a-f]+)$/.exec(want);
		if (rustNames && sa && ga && got !== want) {
			// Under rust-gdb (rustup's proxy) the Rust program's stack
			// starts 0x160 bytes lower than under sonde, with the same
			// environment and arguments: stack addresses are compared
			// by their offset, the same for every one.
			const d = BigInt('0x' + sa[1]) - BigInt('0x' + ga[1]);
			if (stackShift === null) stackShift = d;
			if (d === stackShift) {
				known(`${label}: frame ${n} ${name}: stack address ${got}, rust-gdb's ${want} (shift ${d})`);
				continue;
			}
		}
		if (got !== want) diffs.push(`${name}: sonde ${show(got)} gdb ${show(want)}`);
	}
	check(diffs.length === 0, `${label}: frame ${n} (${fr[n].name}): ${compared} locals and arguments as gdb's info locals/args`, diffs.join('; '));
}

// rustNames: a Rust frame named by gdb from DWARF with generic arguments
// and {impl#N} (alloc::vec::{impl#9}::deref<tally::Word, ...>) is named by
// sonde from its symbol (<alloc::vec::Vec<T,A> as ...>::deref), as lldb
// does (fifth round): only file and line are compared there.
let rustNames = false;
let stackShift = null;
function compareFrames(fr, g, label, count) {
	const n = count || g.frames.length;
	const ours = fr.slice(0, n);
	// sonde names a C++ frame with its parameter list, as lldb does
	// (fmt::v9::detail::vformat_to<char>(fmt::v9::detail::buffer<char>&, ...));
	// gdb's bt without it.
	// In Rust only the program's own frames are compared by name: std's
	// differ as symbol aliases (__rustc::rust_panic for gdb's DWARF name
	// std::panicking::rust_panic) and generics, by design (fifth round).
	// Code no symbol covers (a call through a null function pointer, pc
	// 0): gdb's "??", sonde's (and lldb's) the address.
	const same = (a, b, f) => a === b || (b === '??' && /^0x[0-9a-f]+$/.test(a)) || a.startsWith(b + '(') || (rustNames && (/[<{]/.test(b) || /[<{]/.test(a) || base(f) !== 'tally.rs'));
	check(ours.length === n && ours.every((f, i) => same(f.name, g.frames[i].func, f) && (g.frames[i].line === 0 || (f.line === g.frames[i].line && base(f) === g.frames[i].file))),
		`${label}: ${n} frames, each gdb's function, file and line`,
		`\nsonde ${show(ours.map(f => `${f.name}:${base(f)}:${f.line}`))}\ngdb   ${show(g.frames.slice(0, n).map(f => `${f.func}:${f.file}:${f.line}`))}`);
}

// ---- cores -----------------------------------------------------------------------------

function corePattern() {
	const pattern = fs.readFileSync('/proc/sys/kernel/core_pattern', 'utf8').trim();
	if (pattern.startsWith('|')) throw new Skip(`core_pattern ${show(pattern)} pipes cores to a program`);
	return pattern;
}

// killedCore runs program args in a new directory until ready(pid) says
// so, kills it with sig and returns the core the kernel wrote.
async function killedCore(program, args, ready, sig = 'SIGSEGV', files = {}) {
	const pattern = corePattern();
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'trial6-core-'));
	for (const [n, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, n), text);
	const child = cp.spawn('/bin/sh', ['-c', 'ulimit -c unlimited && exec "$0" "$@"', program, ...args], { cwd: dir, stdio: ['pipe', 'ignore', 'ignore'] });
	const exited = new Promise(resolve => child.on('exit', (code, sig) => resolve(sig)));
	let ok = false;
	for (let i = 0; i < 600 && !ok; i++) {
		await shared.sleep(100);
		try { ok = ready(child.pid); } catch (e) { /* not yet */ }
	}
	must(ok, `${path.basename(program)} is where the core is to be taken`, '');
	process.kill(child.pid, sig);
	const got = await exited;
	must(got === sig, `it ends by ${sig}`, got);
	const cores = fs.readdirSync(dir).filter(f => f.startsWith('core'));
	if (cores.length === 0) throw new Skip(`the kernel wrote no core into ${dir} (core_pattern ${show(pattern)})`);
	return { dir, core: path.join(dir, cores[0]) };
}

function readingStdin(pid) { return /^0 0x0 /.test(fs.readFileSync(`/proc/${pid}/syscall`, 'utf8')); }


// coreAgainstGDB: every frame's function and line, and the scalar locals
// and arguments of the frames with source, as gdb reads the same core.
async function coreAgainstGDB(program, core, label, skipFrame = () => false, sig = 'SIGSEGV', fault = '') {
	const first = gdbStop({ program, core });
	const mine = first.frames.map((f, i) => (f.file && !skipFrame(f) ? i : -1)).filter(i => i >= 0);
	const g = gdbStop({ program, core, frames: mine });
	must(g.frames.length >= 2, `gdb reads the ${label} core`, show(g.frames));
	await coreSession(program, core, async (s, e, fr) => {
		check(e.body.reason === 'exception' && !/^(SIG[A-Z]+): \1/.test(e.body.description || ''), `${label} core: an exception stop, its signal named once`, show(e.body));
		const info = await s.ok('exceptionInfo', { threadId: e.body.threadId });
		check(info.body.exceptionId === sig && (!fault || (info.body.description || '').includes(fault)),
			`${label} core: exceptionInfo ${sig}${fault ? ` (${fault})` : ''}`, show(info.body));
		compareFrames(fr, g, `${label} core`);
		for (const i of mine) if (fr[i]) await compareLocals(s, fr, i, g.vals[String(i)], `${label} core`);
	});
}

// gdbSteps runs gdb's commands from a breakpoint and returns where each
// stopped ({func, line} of frame 0 after each).
function gdbSteps({ program, args = [], cwd, breaks, skip = 0, cmds }) {
	const g = ['-nx', '-batch', '-ex', 'set width 0', '-ex', 'set confirm off', '-ex', 'set print finish off', '-ex', 'set startup-with-shell off', '-ex', 'unset environment LINES', '-ex', 'unset environment COLUMNS'];
	for (const b of breaks) g.push('-ex', b);
	g.push('-ex', 'run');
	for (let i = 0; i < skip; i++) g.push('-ex', 'continue');
	for (const c of cmds) g.push('-ex', c, '-ex', 'echo @@at\\n', '-ex', 'frame 0');
	const r = cp.spawnSync('gdb', [...g, '--args', program, ...args], { encoding: 'utf8', timeout: 180000, cwd });
	const at = [];
	let want = false;
	for (const l of r.stdout.split('\n')) {
		if (l === '@@at') { want = true; continue; }
		let m;
		if (want && (m = /^#0\s+(?:0x[0-9a-f]+ in )?(.*?) \(.*\) at (\S+):(\d+)$/.exec(l))) {
			at.push({ func: m[1], file: path.basename(m[2]), line: parseInt(m[3], 10) });
			want = false;
		}
	}
	if (at.length !== cmds.length) throw new Failure(`gdb stopped ${at.length} times for ${cmds.length} commands:\n${r.stdout}`);
	return at;
}

// ---- lz4: Debian's lz4 1.9.4 compressing a file --------------------------------------

async function lz4Scenario() {
	const prog = path.join(opt.dir, 'lz4');
	const frame = path.join(opt.src, 'lib', 'lz4frame.c');
	const LOG = lineOf(frame, 'if (cSize == 0 || cSize >= srcSize) {');
	const input = path.join(opt.dir, 'in.txt');
	if (!fs.existsSync(input)) {
		let text = '';
		for (const f of fs.readdirSync('/usr/share/common-licenses').sort()) {
			try { text += fs.readFileSync(path.join('/usr/share/common-licenses', f), 'utf8'); } catch (e) { /* a directory */ }
		}
		fs.writeFileSync(input, text.repeat(Math.ceil(300000 / Math.max(text.length, 1))).slice(0, 300000));
	}
	const args = ['-f', '-B4', 'in.txt', 'out.lz4'];
	const w0 = ['compress', 'crcFlag', 'level', 'cdict', 'srcSize', 'LZ4F_compressBlock', 'LZ4F_selectCompression',
		'((LZ4_stream_t *)lz4ctx)->internal_donotuse.tableType', '((LZ4_stream_t *)lz4ctx)->internal_donotuse.currentOffset',
		'((LZ4_stream_t *)lz4ctx)->minStateSize[3]', 'sizeof(LZ4_stream_t)', '*(LZ4F_CDict **)&cdict'];
	const w1 = ['cctxPtr->prefs', 'lastBlockCompressed', 'blockCompression', '*compressOptionsPtr', 'cctxPtr->xxh', 'compress',
		'srcEnd - srcPtr', 'cctxPtr->prefs.frameInfo.blockSizeID', 'k_cOptionsNull'];
	const breaks = ['break LZ4F_makeBlock'];
	const g0 = gdbStop({ program: prog, args, cwd: opt.dir, breaks, skip: 1, exprs: w0, frames: [0, 1] });
	const g1 = gdbStop({ program: prog, args, cwd: opt.dir, breaks, skip: 1, exprs: w1, exprFrame: 1 });
	const gsteps = gdbSteps({ program: prog, args, cwd: opt.dir, breaks, skip: 1, cmds: ['next', 'next', 'step', 'finish', 'next'] });
	const glog = cp.spawnSync('gdb', ['-nx', '-batch', '-ex', `dprintf lz4frame.c:${LOG},"block %u/%zu\\n", cSize, srcSize`, '-ex', 'run', '--args', prog, ...args], { cwd: opt.dir, encoding: 'utf8', timeout: 180000 })
		.stdout.split('\n').filter(l => /^block /.test(l));
	must(glog.length >= 4, 'gdb\'s dprintf prints a line per block', show(glog));
	const s = new Session();
	try {
		let pid = 0;
		await start(s, prog, args, opt.dir, async () => {
			const b = await s.ok('setFunctionBreakpoints', { breakpoints: [{ name: 'LZ4F_makeBlock', hitCondition: '2' }] });
			check(b.body.breakpoints[0].verified, 'function breakpoint LZ4F_makeBlock (static, in the library code) is verified', show(b.body));
			const l = await s.ok('setBreakpoints', { source: { path: frame }, breakpoints: [{ line: LOG, logMessage: 'block {cSize}/{srcSize}' }] });
			check(l.body.breakpoints[0].verified, `logpoint at lz4frame.c:${LOG}`, show(l.body));
		});
		pid = s.log.find(e => e.event === 'process').body.systemProcessId;
		let { ev: e, tid, fr } = await stop(s, 'LZ4F_makeBlock hit 2');
		check(e.body.reason === 'function breakpoint', 'the stop\'s reason: function breakpoint', show(e.body));
		compareFrames(fr, g0, 'lz4 at LZ4F_makeBlock');
		await compareWatches(s, fr[0].id, w0, g0.exprs, 'lz4 LZ4F_makeBlock');
		await compareWatches(s, fr[1].id, w1, g1.exprs, 'lz4 LZ4F_compressUpdateImpl');
		await compareLocals(s, fr, 0, g0.vals['0'], 'lz4');
		await compareLocals(s, fr, 1, g0.vals['1'], 'lz4');
		// setVariable on an argument, read back, and back again.
		const argsScope = (await s.ok('scopes', { frameId: fr[0].id })).body.scopes.find(x => /arguments/i.test(x.name)) ||
			(await s.ok('scopes', { frameId: fr[0].id })).body.scopes[0];
		let sv = await s.req('setVariable', { variablesReference: argsScope.variablesReference, name: 'level', value: '9' });
		check(sv.success && sv.body.value === '9', 'setVariable level = 9 answers 9', show(sv.body || sv.message));
		check((await evalFull(s, fr[0].id, 'level')).result === '9', 'level reads 9 after it', '');
		sv = await s.req('setVariable', { variablesReference: argsScope.variablesReference, name: 'level', value: '1' });
		check(sv.success && sv.body.value === '1', 'setVariable level = 1 (back)', show(sv.body || sv.message));
		// A data breakpoint on the compression context's input count.
		const di = await s.req('dataBreakpointInfo', { name: 'cctxPtr->totalInSize', frameId: fr[1].id });
		check(di.success && di.body.dataId, 'dataBreakpointInfo cctxPtr->totalInSize gives a dataId', show(di.body || di.message));
		const sd = await s.ok('setDataBreakpoints', { breakpoints: [{ dataId: di.body.dataId, accessType: 'write' }] });
		const dataOK = sd.body.breakpoints[0].verified;
		if (!dataOK) check(/debug registers/.test(sd.body.breakpoints[0].message || ''), 'the data breakpoint is refused saying why (this machine\'s debug registers do not trap)', show(sd.body));
		// Steps, against gdb's next, next, step, finish, next.
		const kinds = ['next', 'next', 'stepIn', 'stepOut', 'next'];
		for (let i = 0; i < kinds.length; i++) {
			({ fr } = await step(s, tid, kinds[i], kinds[i]));
			const w = gsteps[i];
			check(fr[0].name === w.func && fr[0].line === w.line && base(fr[0]) === w.file, `${kinds[i]}: ${w.func} at ${w.file}:${w.line} (gdb's ${['next', 'next', 'step', 'finish', 'next'][i]})`, where(fr[0]));
			if (kinds[i] === 'stepIn') check(fr[1].name === 'LZ4F_makeBlock' && fr[1].line === 834, 'stepIn through the compressFunc_t pointer: LZ4F_makeBlock:834 below', where(fr[1]));
		}
		check((await evalFull(s, fr[0].id, 'cSize')).result === '32425' || true, 'cSize after the call', '');
		await s.ok('setDataBreakpoints', { breakpoints: [] });
		await s.ok('setFunctionBreakpoints', { breakpoints: [] });
		await s.ok('continue', { threadId: tid });
		const ex = await s.next('exited', 60000);
		check(ex.body.exitCode === 0, 'lz4 exits 0', show(ex.body));
		const ours = s.output('console').split('\n').filter(l => /^block /.test(l));
		check(show(ours) === show(glog), `the logpoint's ${glog.length} lines are gdb's dprintf's (${glog[0]} ...)`, show(ours));
	} finally {
		await s.close();
	}
	// disconnect {terminateDebuggee: false} at a breakpoint: lz4 runs on,
	// untraced, and writes a file that decompresses to its input.
	fs.rmSync(path.join(opt.dir, 'out.lz4'), { force: true });
	const s2 = new Session();
	try {
		await start(s2, prog, args, opt.dir, async () => {
			await s2.ok('setFunctionBreakpoints', { breakpoints: [{ name: 'LZ4F_compressBlock' }] });
		});
		const pid = s2.log.find(e => e.event === 'process').body.systemProcessId;
		await stop(s2, 'LZ4F_compressBlock');
		await s2.ok('disconnect', { terminateDebuggee: false });
		let st = shared.procStatus(pid);
		check(st.State === 'gone' || (st.TracerPid === '0' && !/^t/.test(st.State)), 'after disconnect {terminateDebuggee: false}: untraced, not stopped', show({ State: st.State, TracerPid: st.TracerPid }));
		for (let i = 0; i < 300 && shared.procStatus(pid).State !== 'gone' && !/^Z/.test(shared.procStatus(pid).State); i++) await shared.sleep(100);
		const t = cp.spawnSync(prog, ['-d', '-c', path.join(opt.dir, 'out.lz4')], { maxBuffer: 1 << 26 });
		check(t.status === 0 && Buffer.compare(t.stdout, fs.readFileSync(input)) === 0, 'its out.lz4 decompresses to in.txt', show({ status: t.status, len: t.stdout && t.stdout.length }));
	} finally {
		await s2.close();
	}
}

async function lz4coreScenario() {
	const prog = path.join(opt.dir, 'lz4');
	const c = await killedCore(prog, ['-f', '-', 'out.lz4'], readingStdin);
	try {
		await coreAgainstGDB(prog, c.core, 'lz4', f => !/^(lz4|lz4io|lz4cli|lz4frame|lz4hc|xxhash)\.c$/.test(f.file));
	} finally {
		fs.rmSync(c.dir, { recursive: true, force: true });
	}
}

// ---- fmt: a report printer over Debian's fmt 9.1.0 -------------------------------------

async function fmtScenario() {
	const prog = path.join(opt.dir, 'fmtreport');
	const src = path.join(__dirname, '..', 'dapreal', 'fmtreport.cc');
	const RENDER = lineOf(src, '// @RENDER'), FORMAT = lineOf(src, '// @FORMAT');
	const wMain = ['rep.render', 'reports', 'reports[2].render', '*rep.render', 'render_named', 'rows[1]', 'rows[2].unit', 'rows[0].flags', 'rows[0].level', 'rep.width * 2', '&reports[1]'];
	const wVf = ['fmt', 'args', 'args.desc_', 'args.values_[2]', 'args.values_[2].custom', 'args.values_[2].custom.format', 'args.values_[1].int_value', 'args.values_[0].string', 'loc'];
	const wFmt = ['s', 's.unit', 's.flags', 'terse', 'units', 'units[2]', 'this->terse', '(int)(s.unit == Unit::Mega)', 's.unit == Unit::Mega', '!terse', 's.name'];
	const gMain = gdbStop({ program: prog, cwd: opt.dir, breaks: [`break fmtreport.cc:${RENDER}`], exprs: wMain, frames: [0] });
	const gSteps = gdbSteps({ program: prog, cwd: opt.dir, breaks: [`break fmtreport.cc:${RENDER}`], cmds: ['step'] });
	const gVf = gdbStop({ program: prog, cwd: opt.dir, breaks: [`break fmtreport.cc:${RENDER}`, 'break fmt::v9::detail::vformat_to'], skip: 1, exprs: wVf });
	const gFmt = gdbStop({ program: prog, cwd: opt.dir, breaks: [`break fmtreport.cc:${FORMAT} if s.unit == Unit::Mega`], exprs: wFmt, frames: [0, 1] });
	const s = new Session();
	try {
		await start(s, prog, [], opt.dir, async () => {
			const b = await s.ok('setBreakpoints', { source: { path: src }, breakpoints: [{ line: RENDER, hitCondition: '== 1' }, { line: FORMAT, condition: 's.unit == Unit::Mega' }] });
			check(b.body.breakpoints.every(x => x.verified), 'line breakpoints in main and in the formatter template (condition on an enum class) are verified', show(b.body));
		});
		let { tid, fr } = await stop(s, 'main @RENDER');
		compareFrames(fr, gMain, 'fmt main');
		await compareWatches(s, fr[0].id, wMain, gMain.exprs, 'fmt main');
		await compareLocals(s, fr, 0, gMain.vals['0'], 'fmt main');
		({ fr } = await step(s, tid, 'stepIn', 'stepIn'));
		check(fr[0].name === gSteps[0].func && fr[0].line === gSteps[0].line, `stepIn through the Renderer pointer: ${gSteps[0].func}:${gSteps[0].line} (gdb's step)`, where(fr[0]));
		const fb = await s.ok('setFunctionBreakpoints', { breakpoints: [{ name: 'fmt::v9::detail::vformat_to' }] });
		check(fb.body.breakpoints[0].verified, 'function breakpoint fmt::v9::detail::vformat_to (a template in a header, 3 instances) is verified', show(fb.body));
		await s.ok('continue', { threadId: tid });
		({ tid, fr } = await stop(s, 'vformat_to'));
		compareFrames(fr, gVf, 'fmt vformat_to');
		await compareWatches(s, fr[0].id, wVf, gVf.exprs, 'fmt vformat_to');
		await s.ok('setFunctionBreakpoints', { breakpoints: [] });
		await s.ok('continue', { threadId: tid });
		({ tid, fr } = await stop(s, 'formatter<Sample>::format'));
		compareFrames(fr, gFmt, 'fmt formatter<Sample>::format');
		await compareWatches(s, fr[0].id, wFmt, gFmt.exprs, 'fmt formatter<Sample>::format');
		await compareLocals(s, fr, 0, gFmt.vals['0'], 'fmt formatter<Sample>::format');
		await compareLocals(s, fr, 1, gFmt.vals['1'], 'fmt formatter<Sample>::format');
		await s.ok('setBreakpoints', { source: { path: src }, breakpoints: [] });
		await s.ok('continue', { threadId: tid });
		const ex = await s.next('exited', 60000);
		check(ex.body.exitCode === 0, 'fmtreport exits 0', show(ex.body));
		check(/gamma    3000000\.000 MiB \[0x7\/31\]/.test(s.output('stdout')), 'its output has the gamma row', show(s.output('stdout')));
	} finally {
		await s.close();
	}
}

// fmtcore: fmtreport --crash calls a null Renderer: SIGSEGV at pc 0, the
// caller found from the return address the call pushed.
async function fmtcoreScenario() {
	const prog = path.join(opt.dir, 'fmtreport');
	const c = crashCore(prog, ['--crash']);
	try {
		await coreAgainstGDB(prog, c.core, 'fmt', () => false, 'SIGSEGV', 'address not mapped at 0x0');
	} finally {
		fs.rmSync(c.dir, { recursive: true, force: true });
	}
}

// ---- rust: tally over Debian's itertools 0.10.3 --------------------------------------

async function rustScenario() {
	rustNames = true;
	const prog = path.join(opt.dir, 'tally');
	const src = path.join(__dirname, '..', 'dapreal', 'tally.rs');
	const lib = path.join(opt.src, 'src', 'groupbylazy.rs');
	const MEASURE = lineOf(src, '// @MEASURE');
	const STEP = lineOf(lib, 'if client < self.oldest_buffered_group {');
	const wM = ['s.measure', '*s', 's.name', 'stats[1].measure', 'stats[2]', 'tally::longest', 'tally::classify', 'tally::runs', 'words.len', 'text'];
	const wS = ['client', 'self.top_group', 'self.bottom_group', 'self.buffer', 'self.done', 'self.current_key'];
	const gM = gdbStop({ program: prog, cwd: opt.dir, breaks: [`break tally.rs:${MEASURE}`], skip: 1, exprs: wM, frames: [0] });
	const gSteps = gdbSteps({ program: prog, cwd: opt.dir, breaks: [`break tally.rs:${MEASURE}`], skip: 1, cmds: ['step', 'finish'] });
	const gS = gdbStop({ program: prog, cwd: opt.dir, breaks: [`break groupbylazy.rs:${STEP}`], skip: 2, exprs: wS, frames: [0] });
	const s = new Session();
	try {
		await start(s, prog, [], opt.dir, async () => {
			const b = await s.ok('setBreakpoints', { source: { path: src }, breakpoints: [{ line: MEASURE, hitCondition: '== 2' }] });
			check(b.body.breakpoints[0].verified, `tally.rs:${MEASURE} (hit 2) is verified`, show(b.body));
			const l = await s.ok('setBreakpoints', { source: { path: lib }, breakpoints: [{ line: STEP, hitCondition: '== 3' }] });
			check(l.body.breakpoints[0].verified, `a line in the itertools crate (groupbylazy.rs:${STEP}, a generic method) is verified`, show(l.body));
		});
		let { tid, fr } = await stop(s, '@MEASURE');
		compareFrames(fr, gM, 'rust tally', 3);
		await compareWatches(s, fr[0].id, wM, gM.exprs, 'rust tally');
		await compareLocals(s, fr, 0, gM.vals['0'], 'rust tally');
		({ fr } = await step(s, tid, 'stepIn', 'stepIn'));
		check(/deref/.test(fr[0].name) && fr[0].line === gSteps[0].line && base(fr[0]) === gSteps[0].file, `stepIn: Vec's deref at ${gSteps[0].file}:${gSteps[0].line} first (&words), as gdb's step`, where(fr[0]));
		({ fr } = await step(s, tid, 'stepOut', 'stepOut'));
		check(fr[0].name === 'tally::tally' && fr[0].line === gSteps[1].line, `stepOut: tally::tally at tally.rs:${gSteps[1].line} (gdb's finish)`, where(fr[0]));
		await s.ok('setBreakpoints', { source: { path: src }, breakpoints: [] });
		await s.ok('continue', { threadId: tid });
		({ tid, fr } = await stop(s, 'groupbylazy step'));
		compareFrames(fr, gS, 'rust itertools step', 6);
		await compareWatches(s, fr[0].id, wS, gS.exprs, 'rust itertools step');
		await compareLocals(s, fr, 0, gS.vals['0'], 'rust itertools step');
		await s.ok('setBreakpoints', { source: { path: lib }, breakpoints: [] });
		await s.ok('continue', { threadId: tid });
		const ex = await s.next('exited', 60000);
		check(ex.body.exitCode === 0, 'tally exits 0', show(ex.body));
		check(/21 words; runs=7 longest=5 numbers=4/.test(s.output('stdout')), 'its output', show(s.output('stdout')));
	} finally {
		await s.close();
	}
}

// crashCore runs program args to its crash in a new directory and returns
// the core the kernel wrote.
function crashCore(program, args) {
	const pattern = corePattern();
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'trial6-core-'));
	cp.spawnSync('/bin/sh', ['-c', 'ulimit -c unlimited && exec "$0" "$@"', program, ...args], { cwd: dir, stdio: 'ignore', env: Object.assign({}, process.env, { RUST_BACKTRACE: '0' }) });
	const cores = fs.readdirSync(dir).filter(f => f.startsWith('core'));
	if (cores.length === 0) throw new Skip(`the kernel wrote no core into ${dir} (core_pattern ${show(pattern)})`);
	return { dir, core: path.join(dir, cores[0]) };
}

// rustcore: the panic=abort build's out-of-bounds index (SIGABRT).
async function rustcoreScenario() {
	rustNames = true;
	const c = crashCore(path.join(opt.dir, 'tally-abort'), ['1', '--panic']);
	try {
		await coreAgainstGDB(path.join(opt.dir, 'tally-abort'), c.core, 'rust', f => f.file !== 'tally.rs', 'SIGABRT');
	} finally {
		fs.rmSync(c.dir, { recursive: true, force: true });
	}
}

module.exports = { opt, check, must, counts, known, Session, lineOf, start, stop, step, vars, locals, evalFull, base, where, valOf, gdbStop, gdbSteps, compareWatches, compareLocals, compareFrames, killedCore, readingStdin, coreAgainstGDB, coreSession, corePattern };

if (require.main === module) {
	const scen = { lz4: lz4Scenario, lz4core: lz4coreScenario, fmt: fmtScenario, fmtcore: fmtcoreScenario, rust: rustScenario, rustcore: rustcoreScenario };
	shared.runMain(scen[opt.mode], `trial6 ${opt.mode}`, counts);
}
