#!/bin/sh
# overhead.sh SONDE [N] [RUNS]: cost of a probe hit on a real program, sonde's
# jump probe against a uprobe (perf probe + perf stat), same run, interleaved.
# python3.11 (Debian) runs hashloop.py N: N calls of PyObject_Hash, probed at
# its out-of-line entry (sonde: *ADDR; perf: the name, which perf probes
# there only — an address is misread for an executable, 0 hits). Prints, per
# run, the loop's CPU seconds in the python process (user+sys: a uprobe's
# trap is the kernel's time, charged to the process) and the count.
set -e
SONDE=${1:?sonde binary}; N=${2:-5000000}; RUNS=${3:-5}
PY=/usr/bin/python3.11; HERE=$(cd "$(dirname "$0")" && pwd)
ADDR=0x$(nm -D $PY | awk '$3=="PyObject_Hash"{print $1}')
export PYTHONHASHSEED=0
perf probe -q -d 'probe_python3:ohash' 2>/dev/null || true
perf probe -q -x $PY "ohash=PyObject_Hash"
T=$(mktemp -d)
for r in $(seq $RUNS); do
  $PY $HERE/hashloop.py $N 2>$T/e >$T/o; echo "untraced $(cat $T/e)"
  $SONDE trace --json --probe "*$ADDR" -- $PY $HERE/hashloop.py $N >$T/s 2>$T/e
  echo "sonde $(grep cpu $T/e) $(grep -o '"hits": [0-9]*' $T/s | head -1)"
  perf stat -x, -o $T/p -e probe_python3:ohash $PY $HERE/hashloop.py $N 2>$T/e >$T/o
  echo "uprobe $(cat $T/e) hits $(grep ohash $T/p | cut -d, -f1)"
done
perf probe -q -d 'probe_python3:ohash'
rm -r $T
