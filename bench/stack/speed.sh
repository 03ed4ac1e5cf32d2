#!/bin/bash
# speed.sh PID [N] [SONDE]: sonde stack, eu-stack -i -s and gdb's thread apply
# all bt on one process, each in turn, N rounds (default 5); prints each
# tool's median wall and CPU (user+sys) time.
P=$1; n=${2:-5}; S=${3:-sonde}
for i in $(seq $n); do
 for t in sonde eu gdb; do
  case $t in sonde) c="$S stack $P";; eu) c="eu-stack -p $P -i -s";; gdb) c="gdb -batch -nx -iex 'set auto-load python-scripts off' -ex 'set debuginfod enabled off' -p $P -ex 'thread apply all bt'";; esac
  /usr/bin/time -f "$t %e %U %S" bash -c "$c >/dev/null 2>&1" 2>&1 | tail -1
 done
done | python3 -c "
import sys,statistics as st,collections
d=collections.defaultdict(list)
for l in sys.stdin:
  t,e,u,s=l.split(); d[t].append((float(e),float(u)+float(s)))
for t,v in d.items(): print(t,'wall med %.3f cpu med %.3f'%(st.median(x[0] for x in v),st.median(x[1] for x in v)))
"
