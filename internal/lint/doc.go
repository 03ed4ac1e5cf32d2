// Package lint holds the repository's own code checks, run as tests (and by
// .ci/run): checks the compiler and vet do not make, such as the length of
// functions. It has no code of its own for other packages to import.
package lint
