/* Test program for symbols/elfsym: PLT stubs of every kind (.plt, .plt.sec
 * with -fcf-protection, .plt.got for functions whose address is also taken),
 * static and global functions of known sizes, aliases and zero-size labels. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sym_global_counter = 3;
static int sym_static_counter;

/* Address taken and called: the linker routes calls through .plt.got. */
pid_t (*volatile sym_getpid_ptr)(void) = getpid;

__attribute__((noinline)) static int sym_static_func(int x) {
	sym_static_counter += x;
	return sym_static_counter * 3;
}

__attribute__((noinline)) int sym_global_func(int x) {
	return sym_static_func(x) + (int)strlen("abc") + x;
}

/* Two names for one function: a global alias and a weak one. */
int sym_aliased_impl(int x) { return x * 7; }
int __sym_underscored(int x) __attribute__((alias("sym_aliased_impl")));
int sym_weak_alias(int x) __attribute__((weak, alias("sym_aliased_impl")));

/* A label with no size between two functions, from assembly. */
__asm__(".text\n.globl sym_asm_label\nsym_asm_label:\n nop\n nop\n");

int main(int argc, char **argv) {
	(void)argv;
	char *p = malloc(16);
	strcpy(p, "hello");
	puts(p);
	printf("%d %d %d\n", sym_global_func(argc), (int)getppid(), sym_aliased_impl(argc));
	printf("%d\n", (int)sym_getpid_ptr() > 0 && getpid() > 0);
	free(p);
	return 0;
}
