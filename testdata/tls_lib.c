// Thread-local variables of a shared library linked at start (static TLS:
// its block is at a fixed offset below each thread's thread pointer).
// Built as libtls_lib.so for the thread-local storage tests of sonde.

struct tls_pair {
	int id;
	double weight;
};

__thread int lib_tls = 1000;
__thread struct tls_pair lib_pair = {7, 0.5};
static __thread long lib_hidden = -5;

// lib_set gives the calling thread's copies values derived from k and
// returns lib_hidden's address (the library's own view).
long *lib_set(int k)
{
	lib_tls = 1000 + k;
	lib_pair.id = 70 + k;
	lib_pair.weight = k * 0.25;
	lib_hidden = -5 - k;
	return &lib_hidden;
}

int *lib_tls_addr(void) { return &lib_tls; }
