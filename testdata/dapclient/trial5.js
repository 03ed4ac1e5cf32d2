// trial5.js drives `sonde dap` with Microsoft's DebugClient through programs
// no sonde test was written for (the fifth real-program trial,
// bench/dap/REAL-PROGRAMS.md): a Rust program over Debian's strsim crate
// (librust-strsim-dev), yaml-cpp 0.7.0's parse utility (C++, STL, exceptions)
// a core of mujs 1.3.2 (C) killed by SIGSEGV while it waits in a script, and
// a core of jq 1.6's stack overflow (a real crash).
//
//	node trial5.js --mode rust|yaml|mujs|jqcore --dir BUILD --src SRCDIR [--verbose] -- ADAPTER [ARGS...]
//
// rust: --dir holds fuzzy, fuzzy-abort (built with -C panic=abort), --src the
// crate's directory (.../strsim-0.10.0); yaml: --dir holds yamlparse,
// --src yaml-cpp's source; mujs: --dir holds mujs. Each check prints "ok ..."
// or "FAIL ..."; the values checked are gdb's at the same stops (the mujs
// core's are read from gdb at run time: its frames and every frame's
// locals and arguments).
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const cp = require('child_process');
const shared = require('./dapshared');
const { Skip, show } = shared;

const { opt, check, must, Session, lineOf, counts } = shared.trialHarness('trial5.js', 'rust|yaml|mujs|jqcore');
function known(what) { console.log(`KNOWN ${what}`); }

const { coreSession, start, stop, step, vars, locals, evalResult: ev, base, where, valOf } = shared.trialSteps(must, 'sonde-trial5', 40, Session);

// ---- rust: fuzzy over Debian's strsim ------------------------------------------------

async function rustScenario() {
	const fuzzySrc = path.join(__dirname, '..', 'dapreal', 'fuzzy.rs');
	const lib = path.join(opt.src, 'src', 'lib.rs');
	const mark = name => lineOf(fuzzySrc, `// @${name}`);
	const JUDGE = mark('JUDGE'), BEST = mark('BEST'), PANIC = mark('PANIC'), ANSWER = mark('ANSWER');
	const INSERT = lineOf(lib, 'elems.insert(a_elems[i - 1].clone(), i);');
	const fuzzy = path.join(opt.dir, 'fuzzy');
	let s = new Session();
	try {
		await start(s, fuzzy, ['stauts'], opt.dir, async () => {
			const b = await s.ok('setBreakpoints', { source: { path: fuzzySrc }, breakpoints: [{ line: JUDGE }] });
			check(b.body.breakpoints[0].verified, `fuzzy.rs:${JUDGE} is verified`, show(b.body));
			const d = await s.ok('setBreakpoints', { source: { path: lib }, breakpoints: [{ line: INSERT, condition: 'i == 3' }] });
			check(d.body.breakpoints[0].verified && d.body.breakpoints[0].line === INSERT, `the dependency's lib.rs:${INSERT} (if i == 3) is verified`, show(d.body));
		});
		let { tid, fr } = await stop(s, 'judge');
		check(fr[0].name === 'fuzzy::Catalog::judge' && fr[0].line === JUDGE && /suggest::\{\{closure\}\}/.test(fr[1].name),
			`fuzzy::Catalog::judge at fuzzy.rs:${JUDGE} called by suggest's closure (gdb: fuzzy::{impl#0}::suggest::{closure#0})`, show(fr.slice(0, 2).map(where)));
		let v = await locals(s, fr[0].id);
		check(valOf(v, 'word') === '"stauts"' && valOf(v, 'name') === '"status"' && v.get('word').variablesReference === 0,
			'word = "stauts", name = "status" (gdb\'s info args), a &str without children', show([...v.values()].map(x => `${x.name}=${x.value}/${x.variablesReference}`)));
		const self = v.get('self');
		const sv = self && self.variablesReference ? await vars(s, self.variablesReference) : new Map();
		check(valOf(sv, 'commands') === 'Rc(strong=2, weak=0)' && valOf(sv, 'aliases') === 'HashMap(size=3)',
			'self->commands is Rc(strong=2, weak=0), self->aliases HashMap(size=3) (rust-gdb\'s printers)', show([...sv.values()].map(x => `${x.name}=${x.value}`)));
		const al = sv.get('aliases') ? await vars(s, sv.get('aliases').variablesReference) : new Map();
		check(valOf(al, '["st"]') === '"status"' && valOf(al, '["co"]') === '"commit"' && valOf(al, '["ci"]') === '"commit"',
			'aliases\' children ["st"] = "status", ["co"] = "commit", ["ci"] = "commit" (rust-gdb)', show([...al.values()].map(x => `${x.name}=${x.value}`)));
		const cmds = sv.get('commands') ? await vars(s, sv.get('commands').variablesReference) : new Map();
		const cv = cmds.get('value') && cmds.get('value').variablesReference ? await vars(s, cmds.get('value').variablesReference) : new Map();
		check(valOf(cmds, 'value') === 'Vec(size=6)' && valOf(cv, '[2]') === '"checkout"' && valOf(cv, '[5]') === '"fetch"',
			'the Rc\'s value is Vec(size=6) with [2] = "checkout", [5] = "fetch"', show([...cv.values()].map(x => `${x.name}=${x.value}`)));
		check(await ev(s, fr[0].id, 'self.commands') === 'Rc(strong=2, weak=0)', 'watch self.commands', await ev(s, fr[0].id, 'self.commands'));
		// The closure's frame: its argument name, a &String, expands to the
		// string (gdb's p *name), not to the String's raw vec.
		const cl = await locals(s, fr[1].id);
		const nm = cl.get('name') && cl.get('name').variablesReference ? [...(await vars(s, cl.get('name').variablesReference)).values()] : [];
		check(nm.length === 1 && nm[0].value === '"status"', 'the closure\'s name (a &String) expands to "status" (gdb\'s p *name)', show(nm));
		// Into the dependency and back, as gdb steps.
		({ fr } = await step(s, tid, 'stepIn', 'stepIn'));
		check(fr[0].name === 'strsim::damerau_levenshtein' && base(fr[0]) === 'lib.rs' && fr[0].line === 391, 'stepIn: strsim::damerau_levenshtein at lib.rs:391 (gdb\'s step)', where(fr[0]));
		({ fr } = await step(s, tid, 'next', 'next'));
		check(fr[0].line === 392, 'next: lib.rs:392', where(fr[0]));
		({ fr } = await step(s, tid, 'stepIn', 'stepIn as_slice'));
		// gdb stops at as_slice's line 1815, the call site of the inlined
		// RawVec::ptr whose code comes first; sonde stops at the first
		// statement, inside the inlined frames (the third round's
		// inline-entry difference, REAL-PROGRAMS.md).
		const asSlice = fr.findIndex(f => /::as_slice$/.test(f.name));
		check(asSlice >= 0 && fr[asSlice].line === 1815 && fr[asSlice + 1].name === 'strsim::damerau_levenshtein',
			'stepIn: into Vec::as_slice (vec/mod.rs:1815, called from damerau_levenshtein), as gdb\'s step', show(fr.slice(0, asSlice + 2).map(where)));
		if (asSlice > 0) known(`stepIn into as_slice stops in its inlined ${fr[0].name} (${base(fr[0])}:${fr[0].line}); gdb shows as_slice:1815 first`);
		({ fr } = await step(s, tid, 'stepOut', 'stepOut'));
		check(fr[0].name === 'strsim::damerau_levenshtein' && fr[0].line === 392, 'stepOut: back at lib.rs:392', where(fr[0]));
		await s.ok('setBreakpoints', { source: { path: fuzzySrc }, breakpoints: [] });
		await s.ok('continue', { threadId: tid });
		({ tid, fr } = await stop(s, 'insert'));
		check(fr[0].name === 'strsim::generic_damerau_levenshtein' && fr[0].line === INSERT && fr[1].name === 'strsim::damerau_levenshtein' && fr[1].line === 392 && fr[2].name === 'fuzzy::Catalog::judge',
			`generic_damerau_levenshtein at lib.rs:${INSERT} <- damerau_levenshtein:392 <- judge (gdb's bt)`, show(fr.slice(0, 3).map(where)));
		v = await locals(s, fr[0].id);
		check(valOf(v, 'i') === '3' && valOf(v, 'db') === '3' && valOf(v, 'width') === '8' && valOf(v, 'max_distance') === '12',
			'i = 3, db = 3, width = 8, max_distance = 12 (gdb\'s info locals)', show([...v.values()].map(x => `${x.name}=${x.value}`)));
		check(valOf(v, 'a_elems') === '&[char](size=6)' && valOf(v, 'elems') === 'HashMap(size=2)' && valOf(v, 'distances') === 'Vec(size=64)',
			'a_elems &[char](size=6), elems HashMap(size=2), distances Vec(size=64) (rust-gdb)', show(['a_elems', 'elems', 'distances'].map(n => valOf(v, n))));
		const el = v.get('elems') ? [...(await vars(s, v.get('elems').variablesReference)).values()].map(x => `${x.name}=${x.value}`).sort() : [];
		check(show(el) === show(["[115 's']=1", "[116 't']=2"]), 'elems\' children [115 \'s\'] = 1, [116 \'t\'] = 2 (rust-gdb: {[116 \'t\'] = 2, [115 \'s\'] = 1}; the order is the hash\'s)', show(el));
		let r = await ev(s, fr[0].id, 'a_elems[1]');
		check(r === "116 't'", "watch a_elems[1] (a slice subscripted, as gdb): 116 't'", r);
		r = await ev(s, fr[0].id, 'b_elems[3] == a_elems[4]');
		check(r === '1' || r === 'true', 'watch b_elems[3] == a_elems[4]', r);
		r = await ev(s, fr[0].id, 'distances[17] + distances[26]');
		check(r === '2', 'watch distances[17] + distances[26] (a Vec subscripted; gdb cannot): 2', r);
		r = await ev(s, fr[0].id, 'a_elems[6]');
		check(/out of bounds/.test(r), 'watch a_elems[6]: out of bounds', r);
		v = await locals(s, fr[1].id);
		const x = v.get('x') ? await vars(s, v.get('x').variablesReference) : new Map();
		check(valOf(v, 'x') === 'Vec(size=6)' && valOf(x, '[0]') === "115 's'" && valOf(x, '[3]') === "117 'u'",
			"damerau_levenshtein's x (a Vec<char>): [0] = 115 's', [3] = 117 'u' (rust-gdb)", show([...x.values()].map(e => `${e.name}=${e.value}`)));
		({ fr } = await step(s, tid, 'stepOut', 'stepOut'));
		check(fr[0].name === 'strsim::damerau_levenshtein' && fr[0].line === 392, 'stepOut: damerau_levenshtein:392 (gdb\'s finish)', where(fr[0]));
		({ fr } = await step(s, tid, 'stepOut', 'stepOut'));
		check(fr[0].name === 'fuzzy::Catalog::judge' && fr[0].line === JUDGE, `stepOut: judge at fuzzy.rs:${JUDGE} (gdb's finish)`, where(fr[0]));
		({ fr } = await step(s, tid, 'next', 'next'));
		check(fr[0].line === JUDGE + 1, `next: fuzzy.rs:${JUDGE + 1}`, where(fr[0]));
		await s.ok('setBreakpoints', { source: { path: lib }, breakpoints: [] });
		await s.ok('setBreakpoints', { source: { path: fuzzySrc }, breakpoints: [{ line: BEST }] });
		await s.ok('continue', { threadId: tid });
		({ tid, fr } = await stop(s, 'best'));
		check(fr[0].name === 'fuzzy::best' && fr[0].line === BEST, `fuzzy::best at fuzzy.rs:${BEST}`, where(fr[0]));
		v = await locals(s, fr[0].id);
		check(valOf(v, 'found') === '&[fuzzy::Suggestion](size=3)', 'found is &[fuzzy::Suggestion](size=3)', valOf(v, 'found'));
		r = await ev(s, fr[0].id, 'found[0].name');
		check(r === '"status"', 'watch found[0].name: "status"', r);
		r = await ev(s, fr[0].id, 'found[1].verdict');
		check(/^(fuzzy::Verdict::)?Far\(3\)$/.test(r), 'watch found[1].verdict (stash): Far(3)', r);
		r = await ev(s, fr[0].id, 'found[0].verdict.Close.distance');
		check(r === '1', 'watch found[0].verdict.Close.distance: 1', r);
		await s.ok('setBreakpoints', { source: { path: fuzzySrc }, breakpoints: [{ line: ANSWER }] });
		await s.ok('continue', { threadId: tid });
		({ tid, fr } = await stop(s, 'answer'));
		v = await locals(s, fr[0].id);
		const ans = v.get('answer') && v.get('answer').variablesReference ? await vars(s, v.get('answer').variablesReference) : new Map();
		check(valOf(v, 'answer') === 'Some("status")' && valOf(ans, '__0') === '"status"' && valOf(v, 'dice') === '0.40000000000000002' && valOf(v, 'found') === 'Vec(size=6)',
			'main\'s answer = Some("status") (an Option<&str>; rust-gdb: core::option::Option<&str>::Some("status")), dice = 0.40000000000000002, found = Vec(size=6)', show([...v.values()].map(x => `${x.name}=${x.value}`)));
		r = await ev(s, fr[0].id, 'top[2].name');
		check(r === '"commit"', 'watch top[2].name: "commit" (rust-gdb\'s top)', r);
		await s.ok('setBreakpoints', { source: { path: fuzzySrc }, breakpoints: [] });
		await s.ok('continue', { threadId: tid });
		const ex = await s.next('exited', 60000);
		check(ex.body.exitCode === 0, 'fuzzy exits 0', show(ex.body));
		await s.next('terminated');
		check(/did you mean status\? \(dice 0\.400\)/.test(s.output('stdout')), 'its output: did you mean status? (dice 0.400)', show(s.output('stdout')));
	} finally {
		await s.close();
	}
	// A panic: the rust_panic exception filter is verified (CodeLLDB has
	// such a filter, lldb-vscode 14 none); the stop itself through a
	// function breakpoint on rust_panic, as a user without the filter does.
	s = new Session();
	try {
		await start(s, fuzzy, ['--panic', 'stat'], opt.dir, async () => {
			const e = await s.ok('setExceptionBreakpoints', { filters: ['rust_panic'] });
			check(e.body && e.body.breakpoints && e.body.breakpoints[0] && e.body.breakpoints[0].verified, 'the rust_panic exception filter is verified', show(e.body));
			await s.ok('setExceptionBreakpoints', { filters: [] });
			const f = await s.ok('setFunctionBreakpoints', { breakpoints: [{ name: 'rust_panic' }] });
			check(f.body.breakpoints[0].verified, 'rust_panic is verified', show(f.body));
		});
		const { tid, fr } = await stop(s, 'rust_panic');
		check(/rust_panic$/.test(fr[0].name), 'stopped in rust_panic', where(fr[0]));
		const i = fr.findIndex(f => f.name === 'fuzzy::main');
		check(i > 0 && fr[i].line === PANIC && /unwrap/.test(fr[i - 1].name), `fuzzy::main at fuzzy.rs:${PANIC} under Result::unwrap (gdb's bt)`, show(fr.map(where)));
		if (i > 0) {
			const v = await locals(s, fr[i].id);
			check(valOf(v, 'word') === '"stat"' && valOf(v, 'args') === 'Vec(size=2)', 'main\'s word = "stat", args = Vec(size=2)', show([...v.values()].map(x => `${x.name}=${x.value}`)));
			const u = await locals(s, fr[i - 1].id);
			check(valOf(u, 'self') === 'Err(DifferentLengthArgs)', 'unwrap\'s self = Err(DifferentLengthArgs) (rust-gdb: core::result::Result<usize, strsim::StrSimError>::Err(strsim::StrSimError::DifferentLengthArgs))', valOf(u, 'self'));
		}
		await s.ok('continue', { threadId: tid });
		const ex = await s.next('exited', 60000);
		check(ex.body.exitCode === 101, 'a panic exits 101', show(ex.body));
		check(/DifferentLengthArgs/.test(s.output()), 'the panic\'s message names DifferentLengthArgs', show(s.output().slice(-300)));
	} finally {
		await s.close();
	}
	// The core of the same panic built with -C panic=abort, against gdb's bt.
	const c = makeCore(path.join(opt.dir, 'fuzzy-abort'), ['--panic', 'stat']);
	try {
		const g = gdbCore(path.join(opt.dir, 'fuzzy-abort'), c.core, []);
		await coreSession(path.join(opt.dir, 'fuzzy-abort'), c.core, async (s, e, fr) => {
			check(e.body.reason === 'exception' && /SIGABRT/.test(e.body.text || e.body.description || ''), 'Rust core: an exception stop, SIGABRT', show(e.body));
			check(fr.length === g.frames.length, `Rust core: ${g.frames.length} frames, as gdb's bt`, `${fr.length}: ${show(fr.map(where))}`);
			const i = fr.findIndex(f => f.name === 'fuzzy::main');
			const gi = g.frames.findIndex(f => f.func === 'fuzzy::main');
			check(i > 0 && i === gi && fr[i].line === PANIC, `Rust core: fuzzy::main at fuzzy.rs:${PANIC} is frame ${gi}, as gdb's`, `${i} ${gi}`);
			check(fr.slice(0, 4).every(f => /pthread_kill|raise|abort/.test(f.name)), 'Rust core: raise and abort on top', show(fr.slice(0, 4).map(where)));
			if (i > 0) {
				const v = await locals(s, fr[i].id);
				const a = v.get('args') ? await vars(s, v.get('args').variablesReference) : new Map();
				check(valOf(v, 'word') === '"stat"' && valOf(a, '[0]') === '"--panic"' && valOf(a, '[1]') === '"stat"', 'Rust core: main\'s word = "stat", args [0] = "--panic", [1] = "stat" (gdb)', show([...a.values()].map(x => `${x.name}=${x.value}`)));
			}
		});
	} finally {
		fs.rmSync(c.dir, { recursive: true, force: true });
	}
}

// ---- yaml: yaml-cpp's parse utility -----------------------------------------------------

async function yamlScenario() {
	const prog = path.join(opt.dir, 'yamlparse');
	const nb = path.join(opt.src, 'src', 'nodebuilder.cpp');
	const line = lineOf(nb, 'node.set_scalar(value);');
	fs.writeFileSync(path.join(opt.dir, 'in.yaml'), 'name: sonde\nlist: [1, 2, three]\nnested:\n  k: &a v\n  r: *a\n');
	fs.writeFileSync(path.join(opt.dir, 'bad.yaml'), 'a: [1, 2\nb: }\n');
	let s = new Session();
	try {
		await start(s, prog, ['in.yaml'], opt.dir, async () => {
			const b = await s.ok('setBreakpoints', { source: { path: nb }, breakpoints: [{ line, condition: 'value == "v"' }] });
			check(b.body.breakpoints[0].verified, `nodebuilder.cpp:${line} if value == "v" is verified`, show(b.body));
		});
		let { tid, fr } = await stop(s, 'OnScalar');
		check(/^YAML::NodeBuilder::OnScalar/.test(fr[0].name) && fr[0].line === line && /HandleNode/.test(fr[1].name) && base(fr[1]) === 'singledocparser.cpp' && fr[1].line === 108,
			`NodeBuilder::OnScalar at nodebuilder.cpp:${line} <- SingleDocParser::HandleNode at singledocparser.cpp:108 (gdb)`, show(fr.slice(0, 2).map(where)));
		const f0 = fr[0].id;
		const v = await locals(s, f0);
		check(valOf(v, 'value') === '@' + (v.get('value') ? v.get('value').value.split(':')[0].slice(1) : '') + ': "v"' || /"v"$/.test(valOf(v, 'value')), 'value (a const std::string &) is "v"', valOf(v, 'value'));
		check(v.get('value') && v.get('value').variablesReference === 0 && v.get('tag') && v.get('tag').variablesReference === 0,
			'value and tag (const std::string &) have no children (gdb\'s string printer)', show([v.get('value'), v.get('tag')]));
		check(valOf(v, 'anchor') === '1' && /line = 3, column = 5/.test(valOf(v, 'mark')), 'anchor = 1, mark = {pos = 45, line = 3, column = 5} (gdb)', show([valOf(v, 'anchor'), valOf(v, 'mark')]));
		const want = {
			'm_stack': 'std::vector of length 3',
			'm_keys': 'std::vector of length 2',
			'm_anchors': 'std::vector of length 2',
			'm_pMemory': 'std::shared_ptr<YAML::detail::memory_holder> (use count 1, weak count 0)',
			'mark.line': '3',
			'(int)anchor + 1': '2',
			'm_stack[2] == &node': 'true',
			'(*m_pMemory).m_pMemory': 'std::shared_ptr<YAML::detail::memory> (use count 1, weak count 0)',
			'm_pMemory->m_pMemory': 'std::shared_ptr<YAML::detail::memory> (use count 1, weak count 0)',
			'node.m_pRef->m_pData': 'std::shared_ptr<YAML::detail::node_data> (use count 1, weak count 0)',
			'node.m_pRef->m_pData->m_isDefined': 'false',
			'm_keys[1].second': 'true',
			'((YAML::EventHandler *)this) == (YAML::EventHandler *)this': 'true',
		};
		for (const [e, w] of Object.entries(want)) {
			const r = await ev(s, f0, e);
			check(r === w, `watch ${e}: ${w} (gdb with libstdc++'s printers and xmethods)`, r);
		}
		let r = await s.req('evaluate', { expression: 'm_pMemory->m_pMemory->m_nodes', frameId: f0, context: 'watch' });
		check(r.success && /^std::set with \d+ elements$/.test(r.body.result) && r.body.indexedVariables > 0, 'watch m_pMemory->m_pMemory->m_nodes: a std::set, paged', show(r.body || r.message));
		({ fr } = await step(s, tid, 'stepIn', 'stepIn'));
		check(/^YAML::detail::node::set_scalar/.test(fr[0].name) && base(fr[0]) === 'node.h' && fr[0].line === 86, 'stepIn: node::set_scalar at node.h:86 (gdb\'s step)', where(fr[0]));
		({ fr } = await step(s, tid, 'stepOut', 'stepOut'));
		// The call ends its line: the return address is line+1's, where
		// gdb's finish stops too.
		check(/OnScalar/.test(fr[0].name) && fr[0].line === line + 1, `stepOut: back in OnScalar at ${line + 1} (gdb's finish)`, where(fr[0]));
		({ fr } = await step(s, tid, 'next', 'next'));
		check(fr[0].line === line + 2, `next: nodebuilder.cpp:${line + 2} (gdb)`, where(fr[0]));
		await s.ok('setBreakpoints', { source: { path: nb }, breakpoints: [] });
		await s.ok('continue', { threadId: tid });
		const ex = await s.next('exited', 60000);
		check(ex.body.exitCode === 0, 'yamlparse exits 0', show(ex.body));
		check(/k: &1 v/.test(s.output('stdout')), 'its output has "k: &1 v"', show(s.output('stdout')));
	} finally {
		await s.close();
	}
	// A parser exception thrown and caught.
	s = new Session();
	try {
		await start(s, prog, ['bad.yaml'], opt.dir, async () => {
			await s.ok('setExceptionBreakpoints', { filters: ['cpp_throw', 'cpp_catch'] });
		});
		let { ev: e, tid, fr } = await stop(s, 'throw');
		check(e.body.reason === 'exception' && /YAML::ParserException/.test(e.body.description || ''), 'throw: "C++ exception of type YAML::ParserException thrown"', show(e.body));
		check(fr[0].name === '__cxa_throw' && /HandleFlowSequence/.test(fr[1].name) && fr[1].line === 225 && /HandleSequence/.test(fr[2].name) && fr[2].line === 158,
			'__cxa_throw <- HandleFlowSequence:225 <- HandleSequence:158 (gdb\'s catch throw)', show(fr.slice(0, 3).map(where)));
		const info = await s.ok('exceptionInfo', { threadId: tid });
		check(info.body.exceptionId === 'YAML::ParserException', 'exceptionInfo: YAML::ParserException', show(info.body));
		const v = await locals(s, fr[3].id);
		check(valOf(v, 'tag') === '"?"' && valOf(v, 'anchor') === '0' && /line = 0, column = 3/.test(valOf(v, 'mark')), 'HandleNode\'s tag = "?", anchor = 0, mark = {pos = 3, line = 0, column = 3} (gdb\'s frame 3)', show([valOf(v, 'tag'), valOf(v, 'anchor'), valOf(v, 'mark')]));
		const r = await ev(s, fr[3].id, 'token.type');
		check(r === 'YAML::Token::FLOW_SEQ_START', 'watch token.type: YAML::Token::FLOW_SEQ_START (gdb)', r);
		await s.ok('continue', { threadId: tid });
		({ ev: e, tid, fr } = await stop(s, 'catch'));
		check(e.body.reason === 'exception' && fr[0].name === '__cxa_begin_catch' && /^parse/.test(fr[1].name) && base(fr[1]) === 'parse.cpp' && fr[1].line === 44,
			'catch: __cxa_begin_catch <- parse at util/parse.cpp:44 (gdb\'s catch catch)', show(fr.slice(0, 2).map(where)));
		await s.ok('continue', { threadId: tid });
		const ex = await s.next('exited', 60000);
		check(ex.body.exitCode === 0, 'yamlparse exits 0 after the caught exception', show(ex.body));
		check(/end of sequence flow not found/.test(s.output()), 'its message: end of sequence flow not found', show(s.output()));
	} finally {
		await s.close();
	}
}

// ---- mujs: a core of the interpreter killed while a script waits --------------------------

// waitingCore runs program args with its stdin a pipe, until it reads
// from the pipe (read(2) in /proc/PID/syscall), kills it with SIGSEGV
// and returns the core the kernel wrote.
async function waitingCore(program, args) {
	const pattern = fs.readFileSync('/proc/sys/kernel/core_pattern', 'utf8').trim();
	if (pattern.startsWith('|')) throw new Skip(`core_pattern ${show(pattern)} pipes cores to a program`);
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'trial5-core-'));
	for (const a of args) if (fs.existsSync(a)) fs.copyFileSync(a, path.join(dir, path.basename(a)));
	const child = cp.spawn('/bin/sh', ['-c', 'ulimit -c unlimited && exec "$0" "$@"', program, ...args.map(a => path.basename(a))], { cwd: dir, stdio: ['pipe', 'ignore', 'ignore'] });
	const exited = new Promise(resolve => child.on('exit', (code, sig) => resolve(sig)));
	let waiting = false;
	for (let i = 0; i < 600 && !waiting; i++) {
		await shared.sleep(100);
		try { waiting = /^0 0x0 /.test(fs.readFileSync(`/proc/${child.pid}/syscall`, 'utf8')); } catch (e) { /* not yet */ }
	}
	must(waiting, `${path.basename(program)} waits in read(2) on its stdin`, '');
	process.kill(child.pid, 'SIGSEGV');
	const sig = await exited;
	must(sig === 'SIGSEGV', 'it ends by SIGSEGV', sig);
	const cores = fs.readdirSync(dir).filter(f => f.startsWith('core'));
	if (cores.length === 0) throw new Skip(`the kernel wrote no core into ${dir} (core_pattern ${show(pattern)})`);
	return { dir, core: path.join(dir, cores[0]) };
}

function makeCore(program, args) {
	const pattern = fs.readFileSync('/proc/sys/kernel/core_pattern', 'utf8').trim();
	if (pattern.startsWith('|')) throw new Skip(`core_pattern ${show(pattern)} pipes cores to a program`);
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'trial5-core-'));
	cp.spawnSync('/bin/sh', ['-c', 'ulimit -c unlimited && exec "$0" "$@"', program, ...args], { cwd: dir, stdio: 'ignore', env: Object.assign({}, process.env, { RUST_BACKTRACE: '0' }) });
	const cores = fs.readdirSync(dir).filter(f => f.startsWith('core'));
	if (cores.length === 0) throw new Skip(`the kernel wrote no core into ${dir} (core_pattern ${show(pattern)})`);
	return { dir, core: path.join(dir, cores[0]) };
}

// gdbCore reads a core with gdb: its frames (function, line) and, for the
// frames listed, the one-line "name = value" lines of info locals and
// info args.
function gdbCore(program, core, frameNums, bt = 'bt') {
	const args = ['-nx', '-batch', '-ex', 'set width 0', '-ex', 'set print frame-arguments none', '-ex', 'echo @@bt\\n', '-ex', bt];
	for (const n of frameNums) args.push('-ex', `echo @@frame ${n}\\n`, '-ex', `frame ${n}`, '-ex', 'info locals', '-ex', 'info args');
	const r = cp.spawnSync('gdb', [...args, program, core], { encoding: 'utf8', timeout: 120000 });
	if (r.error) throw new Skip(`gdb: ${r.error.message}`);
	const frames = [];
	const vals = {};
	let cur = null, inBt = false;
	for (const l of r.stdout.split('\n')) {
		let m;
		if (l === '@@bt') { inBt = true; continue; }
		if (!inBt) continue;
		if ((m = /^@@frame (\d+)$/.exec(l))) { cur = vals[m[1]] = {}; continue; }
		if (cur === null && (m = /^#(\d+)\s+(?:0x[0-9a-f]+ in )?(.*?) \((?:[A-Za-z_0-9]+=\.\.\.(?:, )?)*\)(?: at (\S+):(\d+)| from \S+)?$/.exec(l))) {
			frames.push({ func: m[2], file: m[3] ? path.basename(m[3]) : '', line: m[4] ? parseInt(m[4], 10) : 0 });
			continue;
		}
		if (cur && (m = /^([A-Za-z_][A-Za-z_0-9]*) = (.*)$/.exec(l))) cur[m[1]] = m[2];
	}
	return { frames, vals };
}


async function mujsScenario() {
	const prog = path.join(opt.dir, 'mujs');
	const script = path.join(opt.dir, 'inventory.js');
	fs.writeFileSync(script, [
		'function Inventory(owner) {', '\tthis.owner = owner;', '\tthis.items = {};', '\tthis.count = 0;', '}',
		'Inventory.prototype.add = function (name, qty) {', '\tthis.items[name] = qty;', '\tthis.count += qty;', '\treturn this.count;', '};',
		'function waitFor(inv, label) {', '\tvar answer = readline();', '\treturn answer + label + inv.count;', '}',
		'var inv = new Inventory("depot");', 'inv.add("bolts", 12);', 'inv.add("nuts", 30);', 'print(waitFor(inv, "!"));', ''].join('\n'));
	const c = await waitingCore(prog, [script]);
	try {
		const first = gdbCore(prog, c.core, []);
		const mine = first.frames.map((f, i) => (f.file && !/^(read|libioP|iogetline|iofgets|libc_start_call_main|libc-start)\./.test(f.file) ? i : -1)).filter(i => i >= 0);
		const g = gdbCore(prog, c.core, mine);
		must(g.frames.length > 10 && g.frames.some(f => f.func === 'jsB_readline'), 'gdb reads the core: jsB_readline on the stack', show(g.frames));
		await coreSession(prog, c.core, async (s, e, fr) => {
			check(e.body.reason === 'exception' && /SIGSEGV/.test(e.body.text || e.body.description || ''), 'mujs core: an exception stop, SIGSEGV', show(e.body));
			const ours = fr.slice(0, g.frames.length);
			check(ours.length === g.frames.length && ours.every((f, i) => f.name === g.frames[i].func && (g.frames[i].line === 0 || f.line === g.frames[i].line)),
				`mujs core: ${g.frames.length} frames, each gdb's function and line (${g.frames.map(f => f.func).slice(5, 12).join(' <- ')} ...)`,
				`\nsonde ${show(ours.map(f => `${f.name}:${f.line}`))}\ngdb   ${show(g.frames.map(f => `${f.func}:${f.line}`))}`);
			const extra = fr.slice(g.frames.length).map(f => f.name);
			check(extra.every(n => /__libc_start|_start/.test(n)), 'below main: only libc\'s start (gdb\'s bt stops at main)', show(extra));
			let compared = 0;
			const diffs = [];
			for (const i of mine) {
				if (!fr[i]) continue;
				const v = await locals(s, fr[i].id);
				for (const [name, want] of Object.entries(g.vals[String(i)] || {})) {
					if (/[{}]|<repeats|<error/.test(want)) continue; // structs, unions: one line each, compared below by member
					compared++;
					const got = valOf(v, name);
					if (got !== want) diffs.push(`frame ${i} ${fr[i].name}: ${name} sonde ${got} gdb ${want}`);
				}
			}
			check(compared >= 40 && diffs.length === 0, `mujs core: the ${compared} scalar locals and arguments of frames ${mine.join(',')} are gdb's info locals/args`, diffs.join('\n'));
			const rl = fr.findIndex(f => f.name === 'jsR_run');
			if (rl >= 0) {
				for (const [e, w] of Object.entries({ 'opcode': 'OP_CALL', 'str': '"readline"', 'F->name': '"waitFor"', 'J->top - J->bot': null })) {
					const r = await ev(s, fr[rl].id, e);
					check(w === null ? /^-?\d+$/.test(r) : r.endsWith(w), `mujs core: watch ${e} in jsR_run${w ? ': ' + w : ''}`, r);
				}
			}
			const rd = fr.findIndex(f => f.name === '__GI___libc_read');
			if (rd >= 0) {
				const v = await locals(s, fr[rd].id);
				check(v.get('buf') && v.get('buf').variablesReference === 0 && valOf(v, 'fd') === '0', 'mujs core: read\'s fd = 0 and buf (a void *) without a child', show(v.get('buf')));
			}
			const r = await s.req('setVariable', { variablesReference: (await s.ok('scopes', { frameId: fr[0].id })).body.scopes[0].variablesReference, name: 'fd', value: '3' });
			check(!r.success, 'mujs core: setVariable is refused (a core is read-only)', show(r));
		});
	} finally {
		fs.rmSync(c.dir, { recursive: true, force: true });
	}
}

// ---- jqcore: a real crash, jq 1.6's stack overflow ----------------------------------------

// jq 1.6 frees a value by recursion (jv_free, jvp_array_free): an array
// nested 200000 deep overflows the stack (SIGSEGV; gdb's bt has 209619
// frames). The core's top frames are gdb's, frame 0's argument is the same
// unreadable memory, and the stack ends with a label where the unwinder
// stopped (4096 frames), not as if its last frame were the outermost.
async function jqcoreScenario() {
	const prog = path.join(opt.dir, 'jq');
	const c = makeCore(prog, ['-n', 'reduce range(200000) as $i (null; [.])']);
	try {
		const g = gdbCore(prog, c.core, [0, 1], 'bt 6');
		must(g.frames.length === 6 && g.frames.every(f => f.file === 'jv.c'), 'gdb reads the core: jq\'s jv.c on top', show(g.frames));
		await coreSession(prog, c.core, async (s, e, fr) => {
			check(e.body.reason === 'exception' && /SIGSEGV/.test(e.body.text || e.body.description || ''), 'jq core: an exception stop, SIGSEGV', show(e.body));
			check(g.frames.every((f, i) => fr[i] && fr[i].name === f.func && fr[i].line === f.line && base(fr[i]) === f.file),
				`jq core: the top six frames are gdb's (${g.frames.map(f => f.func).join(', ')})`, `\nsonde ${show(fr.slice(0, 6).map(where))}\ngdb   ${show(g.frames)}`);
			const diffs = [];
			let n = 0;
			for (const i of [0, 1]) {
				const v = await locals(s, fr[i].id);
				for (const [name, want] of Object.entries(g.vals[String(i)] || {})) {
					if (name === '__PRETTY_FUNCTION__') continue; // function-static: not among sonde's locals (fourth round)
					n++;
					const got = valOf(v, name);
					// gdb's info args words an unreadable argument
					// "<error reading variable x (Cannot ...)>", its bt line
					// x=<error reading variable: Cannot ...>, as sonde does.
					const m = /^<error reading variable (\w+) \((.*)\)>$/.exec(want);
					if (m && got === `<error reading variable: ${m[2]}>`) continue;
					if (got !== want) diffs.push(`frame ${i}: ${name} sonde ${got} gdb ${want}`);
				}
			}
			check(n > 0 && diffs.length === 0, `jq core: the ${n} locals and arguments of frames 0 and 1 are gdb's (the overflowed frame's unreadable ones too)`, diffs.join('\n'));
			const r = await s.ok('stackTrace', { threadId: e.body.threadId, startFrame: 4090, levels: 50 });
			const last = r.body.stackFrames[r.body.stackFrames.length - 1];
			check(r.body.totalFrames === 4097 && last.name === '(More stack frames follow...)' && last.presentationHint === 'label',
				'jq core: the stack ends with "(More stack frames follow...)" after 4096 frames (gdb walks all 209619)', show({ total: r.body.totalFrames, last }));
		});
	} finally {
		fs.rmSync(c.dir, { recursive: true, force: true });
	}
}

shared.runMain({ rust: rustScenario, yaml: yamlScenario, mujs: mujsScenario, jqcore: jqcoreScenario }[opt.mode], `trial5 ${opt.mode}`, counts);
