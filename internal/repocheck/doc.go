// Package repocheck holds tests of this repository's own rules, over its
// tracked files rather than any one package: the documentation is
// self-contained (nothing cites a document the repository does not hold),
// every citation of docs/design.md names a section that exists, the
// domain packages import only the standard library (docs/design.md §3.1),
// and the service and the stores reach no transport, provider or front
// end (docs/design.md §3.2).
// It has no code of its own; `go test ./...` runs its tests.
package repocheck
