/* mod_dlopen: loads the library named by argv[1] with dlopen, says "ready",
 * then (if argv[2] is "unload") unloads it after reading a line from stdin,
 * says "unloaded" and waits again. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
	char line[64];
	if (argc < 2)
		return 2;
	/* Wait until the debugger is ready for the load. */
	if (argc > 2 && strcmp(argv[2], "wait") == 0 && !fgets(line, sizeof line, stdin))
		return 3;
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	int (*add)(int, int) = (int (*)(int, int))dlsym(h, "mod_lib_add");
	printf("ready %d\n", add(1, 2));
	fflush(stdout);
	if (!fgets(line, sizeof line, stdin))
		return 0;
	dlclose(h);
	printf("unloaded\n");
	fflush(stdout);
	fgets(line, sizeof line, stdin);
	return 0;
}
