/* Test program for `sonde stack` (cmd/sonde): a frame in a shared library
 * without debug information (libgcc_s's _Unwind_Backtrace calling back into
 * us), which gdb prints as "... in _Unwind_Backtrace () from LIB" with the
 * dynamic linker's name for LIB. Prints "ready" and blocks in the callback. */
#include <stdio.h>
#include <unistd.h>
#include <unwind.h>

static _Unwind_Reason_Code callback(struct _Unwind_Context *ctx, void *arg) {
	(void)ctx;
	(void)arg;
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
	return _URC_NO_REASON;
}

int main(void) {
	_Unwind_Backtrace(callback, NULL);
	return 0;
}
