/* dap_signals: the program of the DAP server's signal tests (package dap):
 * fatal and handled signals, with the "signals" exception filter off and
 * on. The tests find lines by the markers in comments. Modes (argv[1]):
 *   segv       no handler: writes to 0x10
 *   segvcaught a SIGSEGV handler that exits 42; then writes to 0x10
 *   abort      abort()
 *   usr1       no SIGUSR1 handler; waits for a SIGUSR1 sent from outside
 *   pipe       SIGPIPE ignored; writes to a pipe nobody reads; exits 0
 *   late       stops at BP:late, then installs a SIGUSR2 handler and
 *              raises SIGUSR2; exits 0 if the handler ran */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

volatile int handled;

static void on_segv(int s) { (void)s; _exit(42); }
static void on_usr2(int s) { (void)s; handled++; }

__attribute__((noinline)) void fault(void)
{
	*(volatile int *)0x10 = 1; /* BP:fault */
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (strcmp(mode, "segv") == 0)
		fault();
	if (strcmp(mode, "segvcaught") == 0) {
		signal(SIGSEGV, on_segv);
		fault();
	}
	if (strcmp(mode, "trap") == 0) {
		raise(SIGTRAP);
		return 0;
	}
	if (strcmp(mode, "abort") == 0)
		abort(); /* BP:abort */
	if (strcmp(mode, "usr1") == 0) {
		printf("waiting\n");
		fflush(stdout);
		for (;;)
			pause();
	}
	if (strcmp(mode, "pipe") == 0) {
		int fd[2];
		signal(SIGPIPE, SIG_IGN);
		if (pipe(fd) != 0)
			return 5;
		close(fd[0]);
		if (write(fd[1], "x", 1) != -1)
			return 6;
		return 0;
	}
	if (strcmp(mode, "late") == 0) {
		handled = 0; /* BP:late */
		signal(SIGUSR2, on_usr2);
		raise(SIGUSR2);
		return handled == 1 ? 0 : 7;
	}
	return 0;
}
