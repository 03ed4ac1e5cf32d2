#!/usr/bin/env python3
"""release.py PID [MAPS_BEFORE]: after a trace ended, check the process:
alive, TracerPid 0, no thread stopped (t), every executable file mapping
byte-equal to its file, no new rwx/r-x anonymous mapping vs. MAPS_BEFORE."""
import sys, os
pid = int(sys.argv[1])
ok = True
st = open(f"/proc/{pid}/status").read()
tracer = [l for l in st.splitlines() if l.startswith("TracerPid")][0].split()[1]
states = []
for t in os.listdir(f"/proc/{pid}/task"):
    s = open(f"/proc/{pid}/task/{t}/stat").read()
    states.append(s[s.rindex(")")+2])
stopped = [s for s in states if s in "tT"]
print(f"alive, TracerPid {tracer}, {len(states)} threads, states {''.join(sorted(states))}")
ok &= tracer == "0" and not stopped
maps = open(f"/proc/{pid}/maps").read().splitlines()
mem = open(f"/proc/{pid}/mem", "rb", 0)
diff = 0; checked = 0
for l in maps:
    f = l.split()
    lo, hi = (int(x, 16) for x in f[0].split("-"))
    if "x" not in f[1] or len(f) < 6 or not f[5].startswith("/"):
        continue
    path, off = f[5], int(f[2], 16)
    try:
        with open(path, "rb") as fh:
            fh.seek(off); want = fh.read(hi - lo)
    except OSError:
        continue
    mem.seek(lo); got = mem.read(len(want))
    checked += len(want)
    if got != want:
        n = sum(1 for a, b in zip(got, want) if a != b)
        i = next(i for i, (a, b) in enumerate(zip(got, want)) if a != b)
        print(f"DIFF {path} at {lo+i:#x}: {n} bytes differ"); diff += 1
print(f"text: {checked} bytes of executable mappings compared, {diff} mappings differ")
ok &= diff == 0
anon = [l for l in maps if "x" in l.split()[1] and (len(l.split()) < 6)]
if len(sys.argv) > 2:
    before = set(open(sys.argv[2]).read().splitlines())
    anon = [l for l in anon if l not in before]
print(f"new anonymous executable mappings: {len(anon)}", *anon, sep="\n  ")
ok &= not anon
print("RELEASE OK" if ok else "RELEASE FAILED")
