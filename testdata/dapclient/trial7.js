// trial7.js drives `sonde dap` with Microsoft's DebugClient through a
// program no sonde test was written for (the seventh real-program trial,
// bench/dap/REAL-PROGRAMS.md): xmlscan, an inventory over Debian's pugixml
// 1.13 (C++: a tree walker called through a virtual function with its node
// by reference, references to strings, maps, vectors and bools as
// arguments, a reference member, the library's own code stepped into).
// Every stop's watches, locals and arguments are compared with gdb's print
// and info locals/args at the same stop, and every step with gdb's
// step/next/finish (gdb run by this script on the same program).
//
//	node trial7.js --mode pugixml --dir BUILD --src SRCDIR [--verbose] -- ADAPTER [ARGS...]
'use strict';

const path = require('path');
const shared = require('./dapshared');
const t6 = require('./trial6');
const { show } = shared;
const { opt, check, counts, Session, lineOf, start, stop, step, locals, evalFull, base, where, gdbStop, gdbSteps } = t6;

// dapValue is gdb's print of a value as a DAP client sees it: a pointer's
// "(T *) " and a reference's "(T &) " are the response's type, and a
// library container's elements its children, so its summary is what is
// left ("std::vector of length 2, capacity 2 = {...}" is "std::vector of
// length 2"; "std::map with 2 elements = {...}" likewise).
function dapValue(gdb) {
	let want = gdb, type = '';
	let m = /^\(([^()]*(?:\*|&&?))\) ((?:0x[0-9a-f]+|NULL|@0x[0-9a-f]+).*)$/.exec(want);
	if (m) { type = m[1]; want = m[2]; }
	want = want.replace(/^((?:@0x[0-9a-f]+: )?std::vector of length \d+), capacity \d+ = \{.*\}$/, '$1').replace(/^((?:@0x[0-9a-f]+: )?std::(?:map|set|unordered_map) with \d+ elements) = \{.*\}$/, '$1');
	return { want, type };
}

async function compareWatches(s, frameId, exprs, gdbVals, label) {
	for (let i = 0; i < exprs.length; i++) {
		const got = await evalFull(s, frameId, exprs[i]);
		const { want, type } = dapValue(gdbVals[i]);
		check(got.result === want && (type === '' || got.type === type), `${label}: watch ${exprs[i]} = ${gdbVals[i]} (gdb)`,
			`sonde ${show(got.result)} type ${show(got.type)}`);
	}
}

// compareLocals: every one of gdb's info locals and info args of frame n
// against sonde's Locals and Arguments, containers by their summaries;
// values of more than one line in gdb's print (structs with containers)
// are left out, as gdbStop reads one line each.
async function compareLocals(s, fr, n, gvals, label) {
	const v = await locals(s, fr[n].id);
	const diffs = [];
	let compared = 0;
	for (const [name, g] of Object.entries(gvals || {})) {
		// The compiler's range-for variables and function-static
		// __PRETTY_FUNCTION__ are not among sonde's locals (fourth round).
		if (/^__for_(range|begin|end)$/.test(name) || /^__(PRETTY_FUNCTION|func|FUNCTION)__$/.test(name)) continue;
		const { want } = dapValue(g);
		if (/[{}]/.test(want)) continue;
		compared++;
		const got = v.get(name) ? v.get(name).value : `<no ${name}>`;
		if (got !== want) diffs.push(`${name}: sonde ${show(got)} gdb ${show(want)}`);
	}
	check(diffs.length === 0 && compared > 0, `${label}: frame ${n} (${fr[n].name}): ${compared} locals and arguments as gdb's info locals/args`, diffs.join('; '));
}

function compareFrames(fr, g, label, n) {
	const same = (a, b) => a === b || a.startsWith(b + '(');
	const ours = fr.slice(0, n);
	check(ours.length === n && ours.every((f, i) => same(f.name, g.frames[i].func) && f.line === g.frames[i].line && base(f) === g.frames[i].file),
		`${label}: ${n} frames, each gdb's function, file and line`,
		`\nsonde ${show(ours.map(where))}\ngdb   ${show(g.frames.slice(0, n).map(f => `${f.func}:${f.file}:${f.line}`))}`);
}

async function pugixmlScenario() {
	const prog = path.join(opt.dir, 'xmlscan');
	const src = path.join(__dirname, '..', 'dapreal', 'xmlscan.cc');
	const lib = path.join(opt.src, 'src', 'pugixml.cpp');
	const PAGES = lineOf(src, '// @PAGES'), SUMMARY = lineOf(src, '// @SUMMARY');
	// 1. for_each at the third book: the walker's node by reference, its
	// members, a reference member, a map and a vector, C++ bools.
	const wEach = ['node', 'node._root', 'node._root->name', 'node._root->parent->first_attribute->value', 'isBook', 'isBook && elements > 2', '!isBook',
		'limit', 'this->limit', 'limit < 400', 't', 't.books == 1 && !t.sawLong', 'elements', 'shelves', 'titles', 'titles[1]', '_depth', 'this->_depth', '*this'];
	const wTrav = ['walker', 'walker._depth', 'arg_for_each', 'cur == arg_for_each._root', 'cur->first_child == 0', '_root->first_child != 0'];
	const breaks = [`break xmlscan.cc:${PAGES}`];
	const gEach = gdbStop({ program: prog, cwd: opt.dir, breaks, skip: 2, exprs: wEach, frames: [0, 1] });
	const gTrav = gdbStop({ program: prog, cwd: opt.dir, breaks, skip: 2, exprs: wTrav, exprFrame: 1 });
	const gSteps = gdbSteps({ program: prog, cwd: opt.dir, breaks, skip: 2, cmds: ['step', 'finish', 'step', 'step', 'finish', 'next', 'next'] });
	// 2. as_int in the library, reached by the steps: its object and member.
	const wAsInt = ['_attr', '_attr->value', '_attr->name', 'def', '*this', '!_attr'];
	// (The third book's: the stops alternate, @PAGES then as_int.)
	const gAsInt = gdbStop({ program: prog, cwd: opt.dir, breaks: [...breaks, 'break pugi::xml_attribute::as_int'], skip: 5, exprs: wAsInt, frames: [0] });
	// 3. summarize: references to a string, a struct, a vector and a bool.
	const wSum = ['name', 't', 'titles', 'anyLong', 'avg', 't.books == 3 && anyLong', 'titles[0]', 't.pages / t.books', '&anyLong'];
	const gSum = gdbStop({ program: prog, cwd: opt.dir, breaks: [`break xmlscan.cc:${SUMMARY}`], exprs: wSum, frames: [0, 1] });
	const s = new Session();
	try {
		await start(s, prog, [], opt.dir, async () => {
			const b = await s.ok('setBreakpoints', { source: { path: src }, breakpoints: [{ line: PAGES, hitCondition: '== 3' }, { line: SUMMARY, hitCondition: '== 1' }] });
			check(b.body.breakpoints.every(x => x.verified), 'line breakpoints in for_each (hit 3) and summarize are verified', show(b.body));
		});
		let { tid, fr } = await stop(s, 'for_each @PAGES hit 3');
		compareFrames(fr, gEach, 'pugixml for_each', 3);
		await compareWatches(s, fr[0].id, wEach, gEach.exprs, 'pugixml for_each');
		await compareWatches(s, fr[1].id, wTrav, gTrav.exprs, 'pugixml traverse');
		await compareLocals(s, fr, 0, gEach.vals['0'], 'pugixml for_each');
		await compareLocals(s, fr, 1, gEach.vals['1'], 'pugixml traverse');
		// Steps against gdb's: into attribute(), out, into as_int ...
		const kinds = ['stepIn', 'stepOut', 'stepIn', 'stepIn', 'stepOut', 'next', 'next'];
		const gkinds = ['step', 'finish', 'step', 'step', 'finish', 'next', 'next'];
		for (let i = 0; i < kinds.length; i++) {
			({ fr } = await step(s, tid, kinds[i], kinds[i]));
			const w = gSteps[i];
			check(fr[0].name.startsWith(w.func) && fr[0].line === w.line && base(fr[0]) === w.file,
				`${kinds[i]}: ${w.func} at ${w.file}:${w.line} (gdb's ${gkinds[i]})`, where(fr[0]));
			if (i === 2) {
				// In as_int (gdb's second step): its watches and locals.
				await compareWatches(s, fr[0].id, wAsInt, gAsInt.exprs, 'pugixml as_int');
				await compareLocals(s, fr, 0, gAsInt.vals['0'], 'pugixml as_int');
			}
		}
		await s.ok('continue', { threadId: tid });
		({ tid, fr } = await stop(s, 'summarize'));
		compareFrames(fr, gSum, 'pugixml summarize', 2);
		await compareWatches(s, fr[0].id, wSum, gSum.exprs, 'pugixml summarize');
		await compareLocals(s, fr, 0, gSum.vals['0'], 'pugixml summarize');
		await compareLocals(s, fr, 1, gSum.vals['1'], 'pugixml main');
		// The reference member under the walker (main's w): gdb's print
		// w.limit, and its address only inside w's one-line value.
		const wl = await evalFull(s, fr[1].id, 'w.limit');
		check(/^@0x[0-9a-f]+: 400$/.test(wl.result) && wl.type === 'const int &', 'main\'s w.limit (a const int &): @0x...: 400, as gdb\'s print', show(wl));
		await s.ok('setBreakpoints', { source: { path: src }, breakpoints: [] });
		await s.ok('continue', { threadId: tid });
		const ex = await s.next('exited', 60000);
		check(ex.body.exitCode === 0, 'xmlscan exits 0', show(ex.body));
		check(/5 books, 5 titles, 8 elements, some long/.test(s.output('stdout')), 'its output', show(s.output('stdout')));
	} finally {
		await s.close();
	}
}

if (require.main === module) {
	const scen = { pugixml: pugixmlScenario };
	shared.runMain(scen[opt.mode], `trial7 ${opt.mode}`, counts);
}
