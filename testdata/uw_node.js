// A JavaScript recursion compiled by V8 (the warm-up makes it hot), then
// blocked in Atomics.wait twenty frames deep: node's main thread has JIT
// frames in anonymous memory between C++ frames. Run with --perf-basic-prof
// to get /tmp/perf-PID.map.
let block = false;
function deep(n) {
  if (n === 0) {
    if (block) {
      console.log("ready");
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
    }
    return 0;
  }
  return deep(n - 1) + 1;
}
for (let i = 0; i < 200000; i++) deep(20);
block = true;
deep(20);
