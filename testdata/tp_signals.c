/* tp_signals: signals handled, ignored and fatal.
 *
 * Raises SIGUSR1 (handled: the handler counts), SIGUSR2 (ignored), then, with
 * argument "fatal", dereferences a null pointer (SIGSEGV, not handled). Exits with
 * the number of SIGUSR1 handler runs otherwise. */
#include <signal.h>
#include <string.h>
#include <unistd.h>

static volatile int handled;

static void on_usr1(int sig) {
	(void)sig;
	handled++;
}

int main(int argc, char **argv) {
	signal(SIGUSR1, on_usr1);
	signal(SIGUSR2, SIG_IGN);
	raise(SIGUSR1);
	raise(SIGUSR2);
	if (argc > 1 && strcmp(argv[1], "fatal") == 0) {
		volatile int *p = 0;
		*p = 1;
	}
	return handled;
}
