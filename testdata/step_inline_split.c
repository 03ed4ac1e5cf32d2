/* step_inline_split: an inlined call whose code GCC interleaves with its
 * caller's at -O2 (dap tests, against gdb's next and finish): the return
 * value of init_registry's second newtable call is stored after
 * open_state's argument setup for strings_init, so init_registry's code
 * ranges are [a, b) and [c, d) with a row of open_state's between them
 * that is not a statement. gdb's next from init_registry's last line goes
 * on through that row without a line and stops at c, an entry of the
 * inlined call shown at its call's line (lua's init_registry in f_luaopen
 * is the same). */
#include <stdio.h>
#include <stdlib.h>

struct value { void *p; unsigned char tag; };
struct table { struct value *array; int n; };
struct state { struct table *registry; int ready; };

volatile int sink;

__attribute__((noinline)) struct table *newtable(struct state *L)
{
	struct table *t = calloc(1, sizeof *t);
	t->array = calloc(4, sizeof(struct value));
	t->n = 4;
	sink = L->ready;
	return t;
}

__attribute__((noinline)) void strings_init(struct state *L) { sink = L->ready + 1; }
__attribute__((noinline)) void tags_init(struct state *L) { sink = L->ready + 2; }

static void init_registry(struct state *L)
{
	struct table *registry = newtable(L);
	L->registry = registry;
	registry->array[0].p = L;
	registry->array[0].tag = 0x48;
	registry->array[1].p = newtable(L);
	registry->array[1].tag = 0x45;
}

__attribute__((noinline)) void open_state(struct state *L)
{
	init_registry(L);
	strings_init(L);
	tags_init(L);
	L->ready = 1;
}

int main(void)
{
	struct state L = {0, 0};
	open_state(&L);
	printf("%d\n", L.registry->n);
	return 0;
}
