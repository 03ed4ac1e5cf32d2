// stk_d: a D program (GDC) blocked in read under a sort's comparator, for
// sonde stack against gdb: D's main is _Dmain ("D main"), where gdb's
// backtrace ends; Phobos' sort and shortSort are inlined and named without
// the module (gdb's spelling).
import core.sys.posix.unistd : pipe, read;
import std.algorithm : sort;
import std.stdio : stdout, writeln;

int deep(int n)
{
    if (n == 0)
    {
        int[2] p;
        pipe(p);
        writeln("ready");
        stdout.flush();
        char c;
        return cast(int) read(p[0], &c, 1);
    }
    return deep(n - 1) + 1;
}

void main()
{
    int[] a = [3, 1, 2];
    a.sort!((x, y) { deep(3); return x < y; });
}
