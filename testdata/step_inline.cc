// step_inline.cc: line steps through C++ methods and a template inlined at
// -O2, compared with gdb's step and next (dap tests).
#include <cstdio>

volatile int sink;

__attribute__((noinline)) int leaf(int v) { sink = v; return v * 2; }

struct Acc {
  int v;
  __attribute__((always_inline)) void add(int x) {
    sink = x;
    v += x;
  }
  __attribute__((always_inline)) int get() const { return v; }
};

template <typename T> __attribute__((always_inline)) inline T sq(T x) {
  sink = (int)x;
  return x * x;
}

__attribute__((noinline)) int run(int n) {
  Acc a{0};
  a.add(n);
  a.add(leaf(sq(n)));
  int r = sq(a.get());
  return r + leaf(r);
}

int main(int argc, char **) {
  std::printf("%d\n", run(argc + 1));
  return 0;
}
