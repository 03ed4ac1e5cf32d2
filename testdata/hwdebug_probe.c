/* A program for internal/testprog's check that this machine delivers
 * hardware debug-register traps: the checker sets an execution breakpoint
 * on probe_target and expects a SIGTRAP before the program exits. */
__attribute__((noinline)) void probe_target(void) { __asm__ volatile(""); }

int main(void) {
	probe_target();
	return 0;
}
