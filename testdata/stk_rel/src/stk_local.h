/* Part of testdata/stk_rel: a header next to the source file. */
static inline __attribute__((always_inline)) void local_block(void) { inc_block(); }
