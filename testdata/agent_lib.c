/* agent_lib: a shared library agent_prog dlopens (MemoryMap.changed test). */
int agent_lib_add(int a, int b) { return a + b + 40; }
