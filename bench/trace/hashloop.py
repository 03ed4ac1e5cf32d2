# hashloop.py N: N dict lookups with int keys, each a call of PyObject_Hash
# (the probed function of the overhead comparison in REAL-PROGRAMS.md).
# Prints the sum, and to stderr the loop's CPU time (user+sys, this process
# only: what a probe adds to the program, whoever traces it).
import sys, time
n = int(sys.argv[1]); d = {i: i for i in range(1000)}; s = 0
t0 = time.process_time()
for i in range(n):
    s += d[i % 1000]
print(s)
print("cpu %.4f" % (time.process_time() - t0), file=sys.stderr)
