import signal, sys
n = [0]
def h(s, f): n[0] += 1
signal.signal(signal.SIGALRM, h)
signal.setitimer(signal.ITIMER_REAL, 0.0002, 0.0002)
d = {i: i for i in range(1000)}; s = 0
for i in range(3000000):
    s += d[i % 1000]
signal.setitimer(signal.ITIMER_REAL, 0)
print(s, "signals>0:", n[0] > 0)
