// Package short is the fast tier's one rule: under `go test -short` (make test-unit) a test that needs a service
// (PostgreSQL, Redis, npm's clients, espeak-ng) skips, saying which; without -short it runs, and a missing service
// fails it loudly.
package short

import "testing"

// Skip skips t under -short, naming the service it needs; without -short it does nothing.
func Skip(t testing.TB, service string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("needs %s: skipped under -short (make test runs it)", service)
	}
}
