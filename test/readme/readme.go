// Package readme reads the tables of the README and the pages under docs/, for the tests that hold the code to
// them, and checks that their relative links resolve (TestLinks).
package readme

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Table returns the table under the header line header in doc (a path from the module's folder, such as
// docs/configuration.md): its lines after the header, up to the blank line that ends it.
func Table(t testing.TB, doc, header string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(Root(t), doc))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(raw), header)
	if !ok {
		t.Fatalf("%s has no table headed %q", doc, header)
	}
	table, _, _ = strings.Cut(table, "\n\n")
	return table
}

// Root is the module's folder: the nearest above the test's working directory (its package's) with a go.mod.
func Root(t testing.TB) string {
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
