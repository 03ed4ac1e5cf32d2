/* hello: the smallest test program; prints its argument count and exits with 3. */
#include <stdio.h>
int main(int argc, char **argv) {
	printf("hello %d\n", argc);
	return 3;
}
