// tp_dispositions: a program whose signal dispositions change while it runs,
// for the tests of sonde's view of them (target/ptrace, dap). At each
// checkpoint it records its own view (sigaction on every signal) in
// own_caught/own_ignored and raises SIGURG, whose default is to ignore it.
//
//   phase 1: SIGUSR1 caught, SIGHUP and SIGPIPE ignored; checkpoint
//   phase 2: raise SIGUSR1 and SIGHUP (pass), install a SIGUSR2 handler
//            (after the first checkpoint), raise SIGUSR2; checkpoint
//   end:     argv[1] "segv": fault at 0x10; "usr2": SIGUSR2 back to its
//            default, raised (fatal); otherwise exit 0.
//   "raise N": SIGUSR1 caught, raised N times, exit 0 (benchmarks)
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

volatile uint64_t own_caught, own_ignored;
volatile int usr1_count, usr2_count;

static void on_usr1(int s) { (void)s; usr1_count++; }
static void on_usr2(int s) { (void)s; usr2_count++; }

static void checkpoint(void) {
	uint64_t c = 0, ig = 0;
	for (int s = 1; s <= 64; s++) {
		struct sigaction sa;
		if (sigaction(s, NULL, &sa) != 0)
			continue;
		if (sa.sa_handler == SIG_IGN)
			ig |= 1ull << (s - 1);
		else if (sa.sa_handler != SIG_DFL)
			c |= 1ull << (s - 1);
	}
	own_caught = c;
	own_ignored = ig;
	raise(SIGURG);
}

int main(int argc, char **argv) {
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	if (argc > 2 && strcmp(argv[1], "raise") == 0) {
		for (int i = atoi(argv[2]); i > 0; i--)
			raise(SIGUSR1);
		return 0;
	}
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	checkpoint();

	raise(SIGUSR1);
	raise(SIGHUP);
	sa.sa_handler = on_usr2;
	sigaction(SIGUSR2, &sa, NULL);
	raise(SIGUSR2);
	checkpoint();

	if (argc > 1 && strcmp(argv[1], "segv") == 0)
		*(volatile int *)0x10 = 1;
	if (argc > 1 && strcmp(argv[1], "usr2") == 0) {
		signal(SIGUSR2, SIG_DFL);
		raise(SIGUSR2);
	}
	return usr1_count == 1 && usr2_count == 1 ? 0 : 3;
}
