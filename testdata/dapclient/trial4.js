// trial4.js drives `sonde dap` with Microsoft's DebugClient through two
// programs built from Debian sources no sonde test was written for (the
// fourth real-program trial, bench/dap/REAL-PROGRAMS.md): jq 1.6 (C) and
// jsoncpp 1.9.5's test runner (C++, STL).
//
//	node trial4.js --mode jq|jsoncpp --dir BUILD --src SRCDIR [--verbose] -- ADAPTER [ARGS...]
//
// Each check prints "ok ..." or "FAIL ..."; the values checked are gdb's at
// the same stops (gdb -nx -batch, recorded in REAL-PROGRAMS.md).
'use strict';

const fs = require('fs');
const path = require('path');
const shared = require('./dapshared');
const { show } = shared;

const { opt, check, must, Session, lineOf, counts } = shared.trialHarness('trial4.js', 'jq|jsoncpp');

const { start, stop, locals, evalResult: ev, base } = shared.trialSteps(must, 'sonde-trial4', 20, Session);

// jq: a breakpoint in a header's static function, a function breakpoint,
// next/stepIn/stepOut against gdb's, the console's p/x and whatis, the exit
// code and output; then an assertion's SIGABRT and the asserting frame.
async function jqScenario() {
	const jq = path.join(opt.dir, 'jq');
	const header = path.join(opt.src, 'src', 'exec_stack.h');
	const hline = lineOf(header, 's->limit = r;');
	fs.writeFileSync(path.join(opt.dir, 'in.json'), '{"a":[1,2,3],"s":"hi"}\n');
	let s = new Session();
	try {
		await start(s, jq, ['-c', '.a | map(.+1) | add', 'in.json'], opt.dir, async () => {
			const b = await s.ok('setBreakpoints', { source: { path: header }, breakpoints: [{ line: hline }] });
			check(b.body.breakpoints[0].verified && b.body.breakpoints[0].line === hline, `exec_stack.h:${hline} (a static function in a header) is verified`, show(b.body));
			const f = await s.ok('setFunctionBreakpoints', { breakpoints: [{ name: 'f_plus' }] });
			check(f.body.breakpoints[0].verified, 'f_plus is verified', show(f.body));
		});
		let { tid, fr } = await stop(s, 'header');
		check(fr[0].name === 'stack_push_block' && base(fr[0]) === 'exec_stack.h' && fr[0].line === hline && fr[1].name === 'frame_push' && base(fr[1]) === 'execute.c',
			`stack_push_block at exec_stack.h:${hline}, called by frame_push (execute.c), as gdb`, show(fr.slice(0, 2)));
		let vars = await locals(s, fr[0].id);
		check(vars.get('sz') && vars.get('sz').value === '40' && vars.get('alloc_sz') && vars.get('alloc_sz').value === '48' && vars.get('r') && vars.get('r').value === '-48',
			'sz = 40, alloc_sz = 48, r = -48 (gdb\'s info args and locals)', show([...vars.values()].map(v => `${v.name}=${v.value}`)));
		check(await ev(s, fr[0].id, 's->limit - r') === '48', 's->limit - r = 48', '');
		await s.ok('setBreakpoints', { source: { path: header }, breakpoints: [] });
		await s.ok('continue', { threadId: tid });
		({ tid, fr } = await stop(s, 'f_plus'));
		check(fr[0].name === 'f_plus' && fr[0].line === 82 && fr[1].name === 'jq_next' && fr[1].line === 854, 'f_plus at builtin.c:82, called by jq_next at execute.c:854 (gdb)', show(fr.slice(0, 2).map(f => `${f.name}:${f.line}`)));
		check(await ev(s, fr[0].id, 'a.u.number') === '1' && await ev(s, fr[0].id, 'b.u.number') === '1', 'a.u.number = 1, b.u.number = 1', '');
		let r = await ev(s, fr[0].id, 'p/x a.kind_flags', 'repl');
		check(r === '0x4', 'console: p/x a.kind_flags is 0x4 (gdb\'s $1 = 0x4)', r);
		r = await ev(s, fr[0].id, 'whatis a', 'repl');
		check(r === 'type = jv', 'console: whatis a is "type = jv"', r);
		const lines = [];
		for (let i = 0; i < 3; i++) {
			await s.ok('next', { threadId: tid });
			({ fr } = await stop(s, 'next'));
			lines.push(fr[0].line);
		}
		check(show(lines) === '[83,86,89]', 'next, next, next: lines 83, 86, 89 (gdb\'s)', show(lines));
		await s.ok('stepIn', { threadId: tid });
		({ fr } = await stop(s, 'stepIn'));
		check(fr[0].name === 'jv_get_kind' && base(fr[0]) === 'jv.c' && fr[0].line === 47, 'stepIn: jv_get_kind at jv.c:47 (gdb)', `${fr[0].name}:${fr[0].line}`);
		await s.ok('stepOut', { threadId: tid });
		({ fr } = await stop(s, 'stepOut'));
		check(fr[0].name === 'f_plus' && fr[0].line === 89, 'stepOut: back in f_plus at line 89 (gdb\'s finish)', `${fr[0].name}:${fr[0].line}`);
		await s.ok('setFunctionBreakpoints', { breakpoints: [] });
		await s.ok('continue', { threadId: tid });
		const ex = await s.next('exited', 60000);
		check(ex.body.exitCode === 0, 'jq exits 0', show(ex.body));
		await s.next('terminated');
		check(/^9\r?\n?$/m.test(s.output('stdout')), 'its output: 9', show(s.output('stdout')));
	} finally {
		await s.close();
	}
	// The assertion in jv_string_implode (jq 1.6's `["a"] | implode`).
	s = new Session();
	try {
		await start(s, jq, ['-n', '["a"] | implode'], opt.dir, async () => {
			await s.ok('setExceptionBreakpoints', { filters: ['signals'] });
		});
		const { ev: e, tid, fr } = await stop(s, 'SIGABRT');
		check(e.body.reason === 'exception', 'SIGABRT: reason exception', show(e.body));
		const info = await s.ok('exceptionInfo', { threadId: tid });
		check(/SIGABRT/.test(info.body.exceptionId), 'exceptionInfo names SIGABRT', show(info.body));
		const i = fr.findIndex(f => f.name === 'jv_string_implode');
		check(i > 0 && base(fr[i]) === 'jv.c' && fr[i].line === 726 && fr[i + 1].name === 'f_string_implode' && fr[i + 1].line === 1133,
			'jv_string_implode at jv.c:726 called by f_string_implode at builtin.c:1133, under abort and __assert_fail (gdb\'s frames 6 and 7)', show(fr.map(f => `${f.name}:${f.line}`)));
		if (i > 0) {
			const v = await locals(s, fr[i].id);
			check(v.get('i') && v.get('i').value === '0' && v.get('len') && v.get('len').value === '1', 'its locals: i = 0, len = 1 (gdb)', show([...v.values()].map(x => `${x.name}=${x.value}`)));
			check(await ev(s, fr[i].id, 'n.kind_flags') === "5 '\\005'", 'n.kind_flags = 5 \'\\005\' (a string: the assertion\'s cause)', '');
		}
	} finally {
		await s.close();
	}
}

// jsoncpp: a condition comparing a std::string with a literal, a
// std::vector<std::string> subscripted in a watch, references to strings.
async function jsoncppScenario() {
	const prog = path.join(opt.dir, 'jsontest');
	const main = path.join(opt.src, 'src', 'jsontestrunner', 'main.cpp');
	const line = lineOf(main, 'printValueTree(fout, value[name], path + suffix + name);');
	const input = path.join(opt.dir, 'in.json');
	fs.writeFileSync(input, '{"name":"sonde","list":[1,2.5,true,"s"],"nested":{"k":null,"n":-7}}\n');
	const s = new Session();
	try {
		await start(s, prog, [input], opt.dir, async () => {
			const b = await s.ok('setBreakpoints', { source: { path: main }, breakpoints: [{ line, condition: 'name == "nested"' }] });
			check(b.body.breakpoints[0].verified, `main.cpp:${line} with the condition name == "nested" is verified`, show(b.body));
		});
		const { ev: e, tid, fr } = await stop(s, 'condition');
		check(e.body.reason === 'breakpoint' && !e.body.description, 'stopped by the breakpoint, no condition error', show(e.body));
		check(fr[0].name === 'printValueTree' && fr[0].line === line, `printValueTree at main.cpp:${line}`, show(fr[0]));
		check(await ev(s, fr[0].id, 'name') === '"nested"', 'name is "nested" (the condition held at its first stop)', await ev(s, fr[0].id, 'name'));
		check(await ev(s, fr[0].id, 'members[2]') === '"nested"' && await ev(s, fr[0].id, 'members[0]') === '"list"', 'members[0] and members[2] (std::vector<std::string> subscripted): "list", "nested"', await ev(s, fr[0].id, 'members[2]'));
		check(await ev(s, fr[0].id, "name[0] == 'n'") === 'true', "name[0] == 'n' (a C++ bool, gdb's true)", await ev(s, fr[0].id, "name[0] == 'n'"));
		check(await ev(s, fr[0].id, 'path') === '"."', 'path (a const std::string &) is "."', await ev(s, fr[0].id, 'path'));
		await s.ok('setBreakpoints', { source: { path: main }, breakpoints: [] });
		await s.ok('continue', { threadId: tid });
		const ex = await s.next('exited', 60000);
		check(ex.body.exitCode === 0, 'jsontest exits 0', show(ex.body));
		const actual = fs.readFileSync(path.join(opt.dir, 'in.actual'), 'utf8');
		check(/\.nested\.n=-7/.test(actual), 'its output file lists .nested.n=-7', show(actual));
	} finally {
		await s.close();
	}
}

shared.runMain(opt.mode === 'jq' ? jqScenario : jsoncppScenario, `trial4 ${opt.mode}`, counts);
