// A JVM program for sonde's stack tests (cmd/sonde/stack_jvm_test.go):
// the main thread warms up a chain of calls several levels deep until the
// JIT has compiled the methods the test does not exclude, then blocks at the
// bottom of that chain in Thread.sleep, so its stack holds interpreted and
// compiled Java frames between libjvm's frames; a second thread spins in
// the same chain for the tests that stop a running JVM.
public class UwJava {
    static volatile long sink;
    static volatile boolean block;

    static long leaf(long x) {
        long s = 0;
        for (int i = 0; i < 100; i++) s += (x ^ i) * 31;
        return s;
    }

    static long level4(long x) throws InterruptedException {
        if (block && Thread.currentThread().getName().equals("main")) {
            System.out.println("ready");
            System.out.flush();
            Thread.sleep(1_000_000);
        }
        return leaf(x) + 1;
    }

    static long level3(long x) throws InterruptedException { return level4(x + 1) * 3; }
    static long level2(long x) throws InterruptedException { return level3(x + 2) ^ 7; }
    static long level1(long x) throws InterruptedException { return level2(x + 3) - 5; }

    static void spin() {
        try {
            for (long i = 0; ; i++) sink += level1(i);
        } catch (InterruptedException e) {
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("spin")) {
            Thread t = new Thread(UwJava::spin, "spinner");
            t.setDaemon(true);
            t.start();
        }
        long t = 0;
        for (long i = 0; i < 20_000; i++) t += level1(i);
        sink = t;
        block = true;
        level1(0);
    }
}
