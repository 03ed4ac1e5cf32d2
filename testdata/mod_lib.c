/* mod_lib: a shared library that mod_dlopen loads at run time. */
int mod_lib_value = 42;
int mod_lib_add(int a, int b) { return a + b + mod_lib_value; }
