/* Part of testdata/stk_rel: a header found through a relative -I directory. */
#include <unistd.h>
static inline __attribute__((always_inline)) void inc_block(void) {
	for (;;)
		pause();
}
