// A library loaded with dlopen whose thread-local variable uses the
// initial-exec model: the dynamic linker must place its block in the
// static TLS surplus (l_tls_offset set at dlopen), in every thread,
// including those that existed before. Built as tls_dlie.so for the
// thread-local storage tests of sonde.

__thread int ie_tls __attribute__((tls_model("initial-exec"))) = 77;

void ie_set(int k) { ie_tls = 77 + k; }

int *ie_tls_addr(void) { return &ie_tls; }
