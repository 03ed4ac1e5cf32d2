#!/usr/bin/env python3
"""Compares `sonde stack` with gdb's `thread apply all bt` frame by frame.

    bench/stack/compare.py [--sonde PATH] [--full] [--core CORE [--exe EXE]] [PID]
    bench/stack/compare.py [--sonde PATH] --symbolize BIN [--count N]

Runs sonde, then gdb (each attaches in turn; sonde must leave the process
running and untraced, which is checked between the two), parses both texts
into threads and frames and prints every difference: the function, the
address when one tool prints it, the file and line, "from LIB", and the
arguments (per argument, so `x=<optimized out>` against `x=3` is one line).
With --symbolize, `sonde symbolize -f -i -C -e BIN` is compared with
`addr2line -f -i -C -e BIN` over N addresses spread over BIN's .text.
Exit status 0 when the texts agree, 1 when they differ, 2 on a usage error.
"""
import argparse
import re
import subprocess
import sys

# gdb without libthread_db (a static binary) says "(process N "name")".
THREAD = re.compile(r'^Thread (\d+) \((?:Thread 0x[0-9a-f]+ \()?(?:LWP|process) (\d+)\)?(?: "(.*)")?\):')
FRAME = re.compile(r'^#(\d+)\s+(?:(0x[0-9a-f]+) in )?(.*)$')


def split_tail(rest):
    """Splits 'FUNC (ARGS) at FILE:LINE' / 'FUNC (ARGS) from LIB'."""
    where = ''
    m = re.search(r'\) (at [^ ]+:\d+|from [^ ]+)$', rest)
    if m:
        where = m.group(1)
        rest = rest[:m.start() + 1]
    # The last balanced (...) group holds the arguments.
    if rest.endswith(')'):
        depth = 0
        for i in range(len(rest) - 1, -1, -1):
            c = rest[i]
            if c == ')':
                depth += 1
            elif c == '(':
                depth -= 1
                if depth == 0:
                    return rest[:i].rstrip(), rest[i + 1:-1], where
    return rest, None, where


def split_args(args):
    """Splits 'a=1, b={x = 1, y = 2}, c="a, b"' at its top-level commas."""
    out, depth, cur, quote = [], 0, '', None
    for c in args or '':
        if quote:
            cur += c
            if c == quote and not cur.endswith('\\' + quote):
                quote = None
            continue
        if c in '"\'':
            quote = c
        elif c in '({[<':
            depth += 1
        elif c in ')}]>':
            depth -= 1
        elif c == ',' and depth == 0:
            out.append(cur.strip())
            cur = ''
            continue
        cur += c
    if cur.strip():
        out.append(cur.strip())
    return out


def parse(text):
    """Returns {lwp: (name, [frame dict], [other lines])}."""
    threads, cur = {}, None
    for line in text.splitlines():
        m = THREAD.match(line)
        if m:
            cur = threads.setdefault(int(m.group(2)), (m.group(3) or '', [], []))
            continue
        if cur is None:
            continue
        m = FRAME.match(line)
        if m:
            func, args, where = split_tail(m.group(3))
            cur[1].append({'n': int(m.group(1)), 'pc': m.group(2), 'func': func,
                           'args': split_args(args), 'where': where, 'locals': []})
        elif line.startswith('        ') and cur[1]:
            cur[1][-1]['locals'].append(line.strip())
        elif line.strip() and not line.startswith('[Inferior'):
            cur[2].append(line.strip())
    return threads


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    return p.stdout, p.stderr, p.returncode


def traced_by(pid):
    try:
        with open('/proc/%d/status' % pid) as f:
            for l in f:
                if l.startswith('TracerPid:'):
                    return int(l.split()[1])
    except OSError:
        return -1
    return 0


def compare(a, b, full):
    """Yields difference lines between sonde (a) and gdb (b)."""
    for lwp in sorted(set(a) | set(b)):
        if lwp not in a or lwp not in b:
            yield 'LWP %d: only in %s' % (lwp, 'sonde' if lwp in a else 'gdb')
            continue
        fa, fb = a[lwp][1], b[lwp][1]
        if a[lwp][2] != b[lwp][2]:
            yield 'LWP %d: notes sonde %s | gdb %s' % (lwp, a[lwp][2], b[lwp][2])
        if len(fa) != len(fb):
            yield 'LWP %d: %d frames in sonde, %d in gdb' % (lwp, len(fa), len(fb))
        for x, y in zip(fa, fb):
            pre = 'LWP %d #%d' % (lwp, x['n'])
            if x['func'] != y['func']:
                yield '%s func: sonde %r | gdb %r' % (pre, x['func'], y['func'])
                continue
            if x['pc'] != y['pc']:
                yield '%s pc: sonde %s | gdb %s' % (pre, x['pc'], y['pc'])
            if x['where'] != y['where']:
                yield '%s where: sonde %r | gdb %r' % (pre, x['where'], y['where'])
            if x['args'] != y['args']:
                yield '%s %s args: sonde (%s) | gdb (%s)' % (pre, x['func'], ', '.join(x['args']), ', '.join(y['args']))
            if full and x['locals'] != y['locals']:
                sa, sb = set(x['locals']), set(y['locals'])
                yield '%s %s locals: sonde-only %s | gdb-only %s' % (pre, x['func'], sorted(sa - sb), sorted(sb - sa))


def text_addresses(binary, count):
    """Returns count addresses spread evenly over binary's .text."""
    out = subprocess.run(['readelf', '-SW', binary], capture_output=True, text=True).stdout
    for l in out.splitlines():
        if ' .text ' in l:
            f = l.split(']', 1)[1].split()
            addr, size = int(f[2], 16), int(f[4], 16)
            step = max(1, size // count)
            return ['%#x' % a for a in range(addr, addr + size, step)]
    return []


def compare_symbolize(sonde, binary, count):
    """Prints the addresses whose answers differ; returns their number."""
    addrs = text_addresses(binary, count)
    inp = '\n'.join(addrs) + '\n'

    def blocks(cmd):
        # One block per address: its frames (function, file:line pairs).
        out = subprocess.run(cmd, input=inp, capture_output=True, text=True, timeout=300).stdout
        lines = out.splitlines()
        return lines

    a = blocks(['addr2line', '-f', '-i', '-C', '-a', '-e', binary])
    b = blocks([sonde, 'symbolize', '-f', '-i', '-C', '-a', '-e', binary])

    def split(lines):
        res, cur = {}, None
        for l in lines:
            if re.match(r'^0x[0-9a-f]+$', l):
                cur = int(l, 16)
                res[cur] = []
            elif cur is not None:
                res[cur].append(l)
        return res
    sa, sb = split(a), split(b)
    n = 0
    for addr in sorted(set(sa) | set(sb)):
        if sa.get(addr) != sb.get(addr):
            n += 1
            if n <= 40:
                print('  %#x: addr2line %s | sonde %s' % (addr, sa.get(addr), sb.get(addr)))
    print('%d addresses, %d differ' % (len(addrs), n))
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--sonde', default='sonde')
    ap.add_argument('--full', action='store_true')
    ap.add_argument('--core')
    ap.add_argument('--exe')
    ap.add_argument('--save', help='write both texts to SAVE.sonde and SAVE.gdb')
    ap.add_argument('--symbolize', metavar='BIN', help='compare symbolize with addr2line on BIN')
    ap.add_argument('--count', type=int, default=2000, help='addresses for --symbolize')
    ap.add_argument('pid', nargs='?', type=int)
    o = ap.parse_args()
    if o.symbolize:
        return 1 if compare_symbolize(o.sonde, o.symbolize, o.count) else 0
    if (o.pid is None) == (o.core is None):
        ap.error('give a PID or --core')
    bt = 'bt full' if o.full else 'bt'
    scmd = [o.sonde, 'stack'] + (['--full'] if o.full else [])
    if o.core:
        scmd += ['--core', o.core] + (['--exe', o.exe] if o.exe else [])
        gcmd = ['gdb', '-batch', '-nx', '-iex', 'set auto-load python-scripts off', '-ex', 'set debuginfod enabled off',
                '-ex', 'thread apply all ' + bt, '-c', o.core] + ([o.exe] if o.exe else [])
    else:
        scmd += [str(o.pid)]
        gcmd = ['gdb', '-batch', '-nx', '-iex', 'set auto-load python-scripts off', '-ex', 'set debuginfod enabled off', '-p', str(o.pid),
                '-ex', 'thread apply all ' + bt]
    sout, serr, src = run(scmd)
    if o.pid is not None and traced_by(o.pid) != 0:
        print('sonde left the process traced (TracerPid %d)' % traced_by(o.pid))
        return 1
    gout, _, _ = run(gcmd)
    if o.save:
        open(o.save + '.sonde', 'w').write(sout + '\n--- stderr (exit %d)\n' % src + serr)
        open(o.save + '.gdb', 'w').write(gout)
    a, b = parse(sout), parse(gout)
    nframes = sum(len(t[1]) for t in b.values())
    diffs = list(compare(a, b, o.full))
    print('%d threads, %d gdb frames, %d sonde frames, %d differences (sonde exit %d)' % (
        len(b), nframes, sum(len(t[1]) for t in a.values()), len(diffs), src))
    for d in diffs:
        print('  ' + d)
    return 1 if diffs else 0


if __name__ == '__main__':
    sys.exit(main())
