/* tp_exit: ends with a code or a signal.
 *
 *   tp_exit code N     exits with N
 *   tp_exit signal N   kills itself with signal N
 *   tp_exit stop       stops itself with SIGSTOP, then exits 4 when continued */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
	if (argc > 2 && strcmp(argv[1], "code") == 0)
		return atoi(argv[2]);
	if (argc > 2 && strcmp(argv[1], "signal") == 0) {
		signal(atoi(argv[2]), SIG_DFL);
		kill(getpid(), atoi(argv[2]));
		pause();
	}
	if (argc > 1 && strcmp(argv[1], "stop") == 0) {
		raise(SIGSTOP);
		return 4;
	}
	return 1;
}
