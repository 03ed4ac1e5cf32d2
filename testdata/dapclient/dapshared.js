// dapshared.js: what session.js and realprog.js share: a DebugClient
// session with an event log and timed requests, the errors that end a
// scenario, and the helpers that look at the debugged program in /proc.
'use strict';

const fs = require('fs');
const path = require('path');
const cp = require('child_process');
const { DebugClient } = require('@vscode/debugadapter-testsupport');

// Failure ends a scenario with a failure, Skip with exit status 3 (the
// machine cannot run it).
class Failure extends Error {}
class Skip extends Error {}

function show(v) { return JSON.stringify(v, (k, x) => (typeof x === 'bigint' ? String(x) : x)); }

function sleep(ms) { return new Promise(r => setTimeout(r, ms)); }

// markers maps the "// @NAME" comments of a source file to their 1-based
// lines.
function markers(file) {
	const m = {};
	fs.readFileSync(file, 'utf8').split('\n').forEach((line, i) => {
		const r = /\/\/ @([A-Z_0-9]+)\s*$/.exec(line);
		if (r) m[r[1]] = i + 1;
	});
	return m;
}

// procStatus returns /proc/PID/status by field; State "gone" when the
// process is no more.
function procStatus(pid) {
	const st = {};
	let text;
	try {
		text = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
	} catch (e) {
		if (e.code === 'ENOENT' || e.code === 'ESRCH') return { State: 'gone', TracerPid: 'gone' };
		throw e;
	}
	for (const line of text.split('\n')) {
		const i = line.indexOf(':');
		if (i > 0) st[line.slice(0, i)] = line.slice(i + 1).trim();
	}
	return st;
}

// startTime is when process pid started (field 22 of /proc/PID/stat, in
// clock ticks since boot), '' when there is no such process: with the pid
// it names one process, where the pid alone may be another's once the
// process ended (pids are recycled).
function startTime(pid) {
	let s;
	try {
		s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
	} catch (e) {
		return '';
	}
	const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
	return f.length > 19 ? f[19] : '';
}

// Proc is a process the scenario started (through the adapter), named by
// pid and start time; taken while it certainly is that process.
class Proc {
	constructor(pid) {
		this.pid = pid;
		this.start = startTime(pid);
	}

	// kill SIGKILLs the process if it is still the one it was (node has no
	// pidfd; the start time is checked right before the signal).
	kill() {
		if (this.start === '' || startTime(this.pid) !== this.start) return;
		try { process.kill(this.pid, 'SIGKILL'); } catch (e) { /* gone */ }
	}
}

// descendantsRunning lists the processes that run program and descend from
// process root (an adapter this scenario started; lldb's inferiors are its
// server's children): the program the adapter launched, and not another
// test's run of the same file.
function descendantsRunning(root, program) {
	const out = [];
	for (const d of fs.readdirSync('/proc')) {
		if (!/^[0-9]+$/.test(d)) continue;
		try {
			if (fs.readlinkSync(`/proc/${d}/exe`) !== program) continue;
		} catch (e) { continue; /* gone, or not ours */ }
		let pid = d;
		for (let depth = 0; depth < 8 && pid !== '0' && pid !== undefined; depth++) {
			pid = procStatus(pid).PPid;
			if (pid === String(root)) {
				out.push(new Proc(parseInt(d, 10)));
				break;
			}
		}
	}
	return out;
}

// adapterDescendants is descendantsRunning for session s's adapter while it
// runs (none once it ended, or when s connected to a port).
function adapterDescendants(s, program) {
	const p = s.dc._adapterProcess;
	return p && !s.adapterExit ? descendantsRunning(p.pid, program) : [];
}

// ---- a client with an event log ----------------------------------------------

const REQUEST_TIMEOUT = 15000;

// Session wraps a DebugClient: every event is logged in arrival order (the
// DebugClient only hands events to listeners present when they come), and
// requests time out.
// opt: adapter (the command line), verbose, port (connect to an adapter
// serving there instead of starting one).
class Session {
	constructor(opt) {
		this.opt = opt;
		this.dc = new DebugClient('env', opt.adapter[0] || '', 'cppdbg', { stdio: 'pipe' }, opt.verbose);
		this.log = [];
		this.taken = new Set();
		this.waiters = [];
		const emit = this.dc.emit.bind(this.dc);
		this.dc.emit = (name, ev) => {
			if (ev && ev.type === 'event') this.onEvent(ev);
			return emit(name, ev);
		};
	}

	async start() {
		const opt = this.opt;
		this.raw = [];
		if (opt.port !== undefined) {
			await this.dc.start(opt.port);
			this.dc._socket.setNoDelay(true);
			this.dc._socket.on('data', d => this.raw.push(d));
			this.dc._socket.on('close', () => { this.adapterExit = { socket: 'closed' }; });
			this.dc._socket.on('error', e => { this.adapterExit = { socket: String(e) }; if (opt.verbose) process.stderr.write(`socket: ${e}\n`); });
			return;
		}
		// DebugClient.start spawns [runtime, executable]: env(1) as the
		// runtime, and the rest of the adapter's command line appended.
		const spawn = cp.spawn;
		cp.spawn = (rt, a, o) => spawn(rt, [...a, ...opt.adapter.slice(1)], o);
		try {
			await this.dc.start();
		} finally {
			cp.spawn = spawn;
		}
		this.dc._adapterProcess.on('exit', (code, sig) => { this.adapterExit = { code, sig }; });
		// A write to an adapter that died fails the request (it times out,
		// saying how the adapter ended), not node.
		this.dc._adapterProcess.stdin.on('error', e => { this.stdinError = e; });
		this.dc._adapterProcess.stdout.on('data', d => this.raw.push(d));
	}

	// checkFraming: the adapter's stdout held DAP messages and nothing else
	// (no byte of the program's output, no log line).
	checkFraming() {
		let buf = Buffer.concat(this.raw);
		let n = 0;
		while (buf.length > 0) {
			const m = /^Content-Length: ([0-9]+)\r\n\r\n/.exec(buf.subarray(0, 64).toString('latin1'));
			if (!m) throw new Failure(`stdout: after ${n} messages, not a DAP header: ${show(buf.subarray(0, 80).toString())}`);
			const start = m[0].length, len = parseInt(m[1], 10);
			if (buf.length < start + len) throw new Failure(`stdout: message ${n + 1} is cut short`);
			JSON.parse(buf.subarray(start, start + len).toString('utf8'));
			buf = buf.subarray(start + len);
			n++;
		}
		console.log(`ok   stdout: ${n} DAP messages and nothing else`);
	}

	onEvent(ev) {
		ev.at = process.hrtime.bigint();
		this.log.push(ev);
		if (this.opt.verbose) process.stderr.write(`event ${show(ev)}\n`);
		for (const w of this.waiters.slice()) this.tryWaiter(w);
	}

	tryWaiter(w) {
		for (let i = 0; i < this.log.length; i++) {
			const ev = this.log[i];
			if (this.taken.has(i) || ev.event !== w.name || !w.pred(ev)) continue;
			this.taken.add(i);
			ev.index = i;
			this.waiters.splice(this.waiters.indexOf(w), 1);
			clearTimeout(w.timer);
			w.resolve(ev);
			return true;
		}
		return false;
	}

	// next returns the first event called name (and matching pred) not
	// returned before, waiting up to ms for it.
	next(name, ms = REQUEST_TIMEOUT, pred = () => true) {
		return new Promise((resolve, reject) => {
			const w = { name, pred, resolve };
			if (this.tryWaiter(w)) return;
			w.timer = setTimeout(() => {
				this.waiters.splice(this.waiters.indexOf(w), 1);
				reject(new Failure(`no "${name}" event within ${ms} ms (events so far: ${this.log.map(e => e.event + (e.body && e.body.reason ? '/' + e.body.reason : '')).join(' ')})`));
			}, ms);
			this.waiters.push(w);
		});
	}

	// req sends a request and returns its response; a failed response
	// throws unless allowFail, a silent adapter times out.
	async req(command, args, { allowFail = false, ms = REQUEST_TIMEOUT } = {}) {
		return this.request(command, args, { allowFail, ms });
	}

	// request is req; close uses it whatever a script makes of req.
	async request(command, args, { allowFail = false, ms = REQUEST_TIMEOUT } = {}) {
		let timer;
		const timeout = new Promise((_, reject) => {
			timer = setTimeout(() => reject(new Failure(`${command}: no response within ${ms} ms${this.adapterExit ? `; the adapter ended: ${show(this.adapterExit)}` : ''}`)), ms);
		});
		const sent = new Promise(resolve => this.dc.doSend(command, args, resolve));
		try {
			const r = await Promise.race([sent, timeout]);
			if (this.opt.verbose) process.stderr.write(`response ${show(r)}\n`);
			if (command === 'disconnect' && r.success) this.disconnected = true;
			if (!r.success && !allowFail) throw new Failure(`${command} ${show(args)} failed: ${r.message || ''} ${show(r.body || {})}`);
			return r;
		} finally {
			clearTimeout(timer);
		}
	}

	output(category) {
		return this.log.filter(e => e.event === 'output' && (!category || e.body.category === category)).map(e => e.body.output).join('');
	}

	async close() {
		if (this.closed) return;
		this.closed = true;
		try {
			if (!this.adapterExit && !this.disconnected) await this.request('disconnect', { terminateDebuggee: true }, { allowFail: true, ms: 5000 });
		} catch (e) { /* the adapter is gone or silent: stopped below */ }
		if (this.dc._socket) {
			this.dc._socket.end();
			return;
		}
		const p = this.dc._adapterProcess;
		if (p && !this.adapterExit) {
			await new Promise(resolve => {
				const t = setTimeout(() => { p.kill('SIGKILL'); resolve(); }, 3000);
				p.on('exit', () => { clearTimeout(t); resolve(); });
			});
		}
	}
}

// runMain runs a scenario and exits: 3 after a Skip (a "SKIP ..." line), 1
// when the scenario threw or counts().failures says checks failed, else 0.
// The last line says PASSED or FAILED, with label and the notes.
async function runMain(scenario, label, counts) {
	let thrown = 0;
	try {
		await scenario();
	} catch (e) {
		if (e instanceof Skip) {
			console.log(`SKIP ${e.message}`);
			process.exit(3);
		}
		console.log(`FAIL ${e instanceof Failure ? e.message : (e && e.stack) || e}`);
		thrown = 1;
	}
	const { failures, notes } = counts();
	const n = failures + thrown;
	console.log(`${n ? `FAILED (${n})` : 'PASSED'} ${label}${notes ? ` (${notes} notes)` : ''}`);
	process.exit(n ? 1 : 0);
}

// trialHarness is what the real-program trials (trial4.js, trial5.js)
// share: their command line (--mode MODES --dir BUILD --src SRCDIR
// [--verbose] -- ADAPTER...), check (records a failure and goes on) and
// must (throws: what follows needs it) counting failures, a Session whose
// req answers failed responses too and whose ok must succeed, lineOf (the
// 1-based line of a file holding a text) and counts for runMain.
function trialHarness(script, modes) {
	const opt = { verbose: false, adapter: [] };
	const argv = process.argv.slice(2);
	for (let i = 0; i < argv.length; i++) {
		const a = argv[i];
		switch (a) {
		case '--mode': opt.mode = argv[++i]; break;
		case '--dir': opt.dir = path.resolve(argv[++i]); break;
		case '--src': opt.src = path.resolve(argv[++i]); break;
		case '--verbose': opt.verbose = true; break;
		case '--': opt.adapter = argv.slice(i + 1); i = argv.length; break;
		default: process.stderr.write(`${script}: unknown option ${a}\n`); process.exit(2);
		}
	}
	if (!opt.mode || !opt.dir || !opt.src || opt.adapter.length === 0) {
		process.stderr.write(`usage: node ${script} --mode ${modes} --dir BUILD --src SRCDIR -- ADAPTER...\n`);
		process.exit(2);
	}
	let failures = 0;
	function check(cond, what, detail) {
		console.log(`${cond ? 'ok  ' : 'FAIL'} ${what}${cond || detail === undefined ? '' : ': ' + detail}`);
		if (!cond) failures++;
		return cond;
	}
	function must(cond, what, detail) {
		if (!check(cond, what, detail)) {
			failures--;
			throw new Failure(`${what}: ${detail}`);
		}
	}
	class TrialSession extends Session {
		constructor() { super(opt); }
		async req(command, args) { return this.request(command, args, { allowFail: true }); }
		async ok(command, args) {
			const r = await this.req(command, args);
			must(r.success, `${command} succeeds`, `${show(args)}: ${r.message || ''}`);
			return r;
		}
	}
	function lineOf(file, text) {
		const i = fs.readFileSync(file, 'utf8').split('\n').findIndex(l => l.includes(text));
		must(i >= 0, `${path.basename(file)} has the line "${text}"`, 'not found');
		return i + 1;
	}
	return { opt, check, must, Session: TrialSession, lineOf, counts: () => ({ failures, notes: 0 }) };
}

// trialSteps is the request sequence the real-program trials share, bound
// to a trial's must: initialize (as client clientID), start (launch, the
// setup of breakpoints between initialized and configurationDone, then
// the launch's answer), stop (the next stopped event and the top levels
// frames of its thread, logged), step (a stepping request, then its stop),
// vars (one variables reference's children by name, first wins), locals
// (a frame's locals and arguments by name), evalResult and evalFull (an
// evaluate's result text, or its whole body; a refusal as "<error …>"),
// coreSession (attach to a core with a new session of the trial's Session
// class, its stop's frames given to inspect, then disconnect), and base,
// where and valOf to print frames and values.
function trialSteps(must, clientID, levels, TrialSession) {
	async function initialize(s) {
		await s.start();
		await s.ok('initialize', { clientID, adapterID: 'sonde', linesStartAt1: true, columnsStartAt1: true, pathFormat: 'path', supportsVariableType: true, supportsVariablePaging: true });
	}
	async function start(s, program, args, cwd, setup) {
		await initialize(s);
		const launched = s.req('launch', { program, args, cwd, stopOnEntry: false });
		await s.next('initialized');
		await setup();
		await s.ok('configurationDone', {});
		must((await launched).success, `launch ${path.basename(program)}`, '');
	}
	async function stop(s, what, n = levels) {
		const ev = await s.next('stopped', 60000);
		const r = await s.ok('stackTrace', { threadId: ev.body.threadId, startFrame: 0, levels: n });
		const fr = r.body.stackFrames;
		console.log(`info ${what}: ${ev.body.reason} ${fr.slice(0, 3).map(f => `${f.name}:${f.line}`).join(' <- ')}`);
		return { ev, tid: ev.body.threadId, fr };
	}
	async function step(s, tid, kind, what) {
		await s.ok(kind, { threadId: tid });
		return stop(s, what);
	}
	async function vars(s, ref) {
		const m = new Map();
		for (const v of (await s.ok('variables', { variablesReference: ref })).body.variables) if (!m.has(v.name)) m.set(v.name, v);
		return m;
	}
	async function locals(s, frameId) {
		const all = new Map();
		for (const sc of (await s.ok('scopes', { frameId })).body.scopes) {
			if (!/^(locals|arguments)$/i.test(sc.name)) continue;
			for (const [k, v] of await vars(s, sc.variablesReference)) if (!all.has(k)) all.set(k, v);
		}
		return all;
	}
	async function evalFull(s, frameId, expression, context = 'watch') {
		const r = await s.req('evaluate', { expression, frameId, context });
		return r.success ? r.body : { result: `<error ${r.message}>`, type: '' };
	}
	async function evalResult(s, frameId, expression, context = 'watch') {
		return (await evalFull(s, frameId, expression, context)).result;
	}
	async function coreSession(program, core, inspect) {
		const s = new TrialSession();
		try {
			await initialize(s);
			const attached = s.req('attach', { program, coreFile: core });
			await s.next('initialized');
			await s.ok('configurationDone', {});
			const r = await attached;
			must(r.success, `attach {program: ${path.basename(program)}, coreFile}`, r.message);
			const { ev: e, fr } = await stop(s, 'core', 200);
			await inspect(s, e, fr);
			await s.ok('disconnect', {});
		} finally {
			await s.close();
		}
	}
	const base = f => (f && f.source ? path.basename(f.source.path || f.source.name || '') : '');
	const where = f => `${f.name}:${base(f)}:${f.line}`;
	const valOf = (m, n) => (m.get(n) ? m.get(n).value : `<no ${n}>`);
	return { initialize, start, stop, step, vars, locals, evalFull, evalResult, coreSession, base, where, valOf };
}

module.exports = { runMain, Failure, Skip, show, sleep, markers, procStatus, startTime, Proc, descendantsRunning, adapterDescendants, REQUEST_TIMEOUT, Session, trialHarness, trialSteps };
