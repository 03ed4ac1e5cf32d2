// Function values and function pointers as a debugger prints them:
// dap's TestFunctionValuesMatchGDB evaluates these names at the marked line
// and compares with gdb's print.
#include <stdarg.h>
#include <stdio.h>

typedef int (*binop)(int, int);

struct ops {
	const char *name;
	binop fn;
	void (*log)(const char *, ...);
	double (*mean)(const double *, unsigned);
};

static int add(int a, int b) { return a + b; }
static int mul(int a, int b) { return a * b; }

static void say(const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
}

static double avg(const double *xs, unsigned n) {
	double s = 0;
	for (unsigned i = 0; i < n; i++)
		s += xs[i];
	return n ? s / n : 0;
}

static void noargs(void) {}

static int apply(binop f, struct ops *o, int x, int y) {
	int r = f(x, y); /* BP:stop */
	o->log("%s(%d, %d) = %d\n", o->name, x, y, r);
	return r;
}

int main(void) {
	struct ops table[2] = {{"add", add, say, avg}, {"mul", mul, say, 0}};
	double xs[3] = {1, 2, 4};
	int t = 0;
	noargs();
	for (int i = 0; i < 2; i++)
		t += apply(table[i].fn, &table[i], 6, 7);
	say("avg %g\n", table[0].mean(xs, 3));
	return t == 55 ? 0 : 1;
}
