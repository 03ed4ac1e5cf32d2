// mathlib.h: a shared library's interface (libdapreal_math.so), called
// through the PLT.
#pragma once
#ifdef __cplusplus
extern "C" {
#endif
double ml_square(double v);
int ml_checksum(const unsigned char *p, int n);
#ifdef __cplusplus
}
#endif
