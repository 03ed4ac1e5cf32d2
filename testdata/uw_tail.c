/* Tail calls for call-site DWARF (gdb's tail-call frames). Built -O2, every
   "tail_" function ends in a jump: its frame is gone while its callee runs.
   Modes:
     chain      caller -> tail_a => tail_b => leaf_block -> pause
     ambiguous  caller -> tail_pick => (tail_b or tail_c) => leaf_block: only
                the frames common to both paths can be rebuilt
   (-> a call, => a tail call). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))

volatile int sink;

NOINLINE void leaf_block(int n)
{
	sink = n;
	pause();
	sink++;
}

NOINLINE void tail_b(int n)
{
	sink = n;
	leaf_block(n + 1);
}

NOINLINE void tail_c(int n)
{
	sink = n * 3;
	leaf_block(n + 2);
}

NOINLINE void tail_a(int n)
{
	sink = n * 2;
	tail_b(n + 1);
}

NOINLINE void tail_pick(int n)
{
	sink = n;
	if (n > 100)
		tail_c(n);
	else
		tail_b(n);
}

NOINLINE int caller(const char *mode)
{
	if (strcmp(mode, "ambiguous") == 0)
		tail_pick(sink + 1);
	else
		tail_a(sink + 1);
	return sink + 1;
}

int main(int argc, char **argv)
{
	printf("ready\n");
	fflush(stdout);
	return caller(argc > 1 ? argv[1] : "chain");
}
