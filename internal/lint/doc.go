// Package lint holds the repository's own code checks, run as tests (and by
// .ci/run): checks the compiler, vet and staticcheck do not make: the length of
// functions, the front ends' imports (session is their door to the analysis
// layers), and that the Markdown files link only inside the repository. It has no code of its own for other packages to import.
package lint
