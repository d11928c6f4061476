// Package readme reads the README's tables, for the tests that hold the code to them.
package readme

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Table returns the README's table under the header line header: its lines after the header, up to the blank line
// that ends it.
func Table(t testing.TB, header string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(raw), header)
	if !ok {
		t.Fatalf("the README has no table headed %q", header)
	}
	table, _, _ = strings.Cut(table, "\n\n")
	return table
}

// root is the module's folder: the nearest above the test's working directory (its package's) with a go.mod.
func root(t testing.TB) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = parent
	}
}
