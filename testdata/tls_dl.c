// Thread-local variables of a library loaded with dlopen (dynamic TLS:
// each thread's block is allocated on first use and found through its
// dtv). Built as tls_dl.so for the thread-local storage tests of sonde.

__thread long dl_tls = 5000;
__thread char dl_name[8] = "dl";
__thread int dl_unused = 31; // never touched by worker threads

void dl_set(int k)
{
	dl_tls = 5000 + k;
	dl_name[2] = (char)('a' + k);
	dl_name[3] = 0;
}

long *dl_tls_addr(void) { return &dl_tls; }
