// mathlib.c: libdapreal_math.so, so that a step into ml_square goes through
// the PLT into another module and a step out comes back.
#include "mathlib.h"

double ml_square(double v) {
	double r = v * v; // @ML_SQUARE
	return r;
}

int ml_checksum(const unsigned char *p, int n) {
	int sum = 0;
	for (int i = 0; i < n; i++)
		sum = sum * 31 + p[i]; // @ML_CHECKSUM
	return sum;
}
