// Package archtest enforces the hexagon's dependency rule on the real import graph.
package archtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/switchboard-ai/switchboard"

type pkg struct {
	path          string
	imports, deps []string
	// tests are what the package's tests import, in the package and beside it.
	tests []string
	dir   string
	files []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-f",
		`{{.ImportPath}}|{{join .Imports ","}}|{{join .Deps ","}}|{{join .TestImports ","}},{{join .XTestImports ","}}|{{.Dir}}|{{join .GoFiles ","}},{{join .TestGoFiles ","}},{{join .XTestGoFiles ","}}`,
		"./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.Split(line, "|")
		pkgs = append(pkgs, pkg{path: parts[0], imports: split(parts[1]), deps: split(parts[2]), tests: split(parts[3]),
			dir: parts[4], files: split(parts[5])})
	}
	return pkgs
}

func split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

func isStd(p string) bool { return !strings.Contains(strings.SplitN(p, "/", 2)[0], ".") }

func TestDependencyRule(t *testing.T) {
	rules := []struct {
		name  string
		scope func(string) bool
		deps  bool // check transitive deps rather than direct imports
		tests bool // check the tests' imports too
		bad   func(string) bool
	}{
		{
			name:  "domain reads and writes no JSON: wire formats are the adapters'",
			scope: func(p string) bool { return within(p, "domain") },
			tests: true,
			bad:   isJSON,
		},
		{
			name:  "domain imports no infrastructure (transitively)",
			scope: func(p string) bool { return within(p, "domain") },
			deps:  true,
			bad: func(d string) bool {
				return strings.Contains(d, "gin-gonic") || strings.HasPrefix(d, "gorm.io") || strings.Contains(d, "google/wire") ||
					d == "net/http" || d == "database/sql" || within(d, "ports") || within(d, "app") || within(d, "adapters")
			},
		},
		{
			name:  "ports import only the standard library and the domain",
			scope: func(p string) bool { return within(p, "ports") },
			bad:   func(d string) bool { return !isStd(d) && !within(d, "domain") },
		},
		{
			name:  "app imports no adapter and no framework",
			scope: func(p string) bool { return within(p, "app") },
			deps:  true,
			bad: func(d string) bool {
				return within(d, "adapters") || strings.Contains(d, "gin-gonic") || strings.HasPrefix(d, "gorm.io") || d == "database/sql"
			},
		},
		{
			name:  "cmd imports only the composition root (and the standard library)",
			scope: func(p string) bool { return within(p, "cmd") },
			bad:   func(d string) bool { return !isStd(d) && !within(d, "wire") },
		},
		{
			name:  "adapters import no app",
			scope: func(p string) bool { return within(p, "adapters") },
			bad:   func(d string) bool { return within(d, "app") || within(d, "wire") },
		},
	}
	pkgs := listPackages(t)
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			checked := 0
			for _, p := range pkgs {
				if !r.scope(p.path) {
					continue
				}
				checked++
				list := p.imports
				if r.deps {
					list = p.deps
				}
				if r.tests {
					list = append(slices.Clone(list), p.tests...)
				}
				for _, d := range list {
					if r.bad(d) {
						t.Errorf("%s imports %s", p.path, d)
					}
				}
			}
			if checked == 0 {
				t.Fatal("the rule matched no package: the layout changed under it")
			}
		})
	}
}

// isJSON reports a package that reads or writes JSON: the standard library's (encoding/json, its v2 and jsontext),
// or any other whose path names JSON (goccy/go-json, json-iterator, go-json-experiment, gjson...) or is one of the
// codecs that do not (bytedance/sonic, ugorji/go/codec).
func isJSON(p string) bool {
	return strings.Contains(strings.ToLower(p), "json") || strings.Contains(p, "bytedance/sonic") || strings.Contains(p, "ugorji/go")
}

// TestIsJSON holds the rule's test of a package to the JSON packages there are, and to the domain's own.
func TestIsJSON(t *testing.T) {
	for p, want := range map[string]bool{"encoding/json": true, "encoding/json/v2": true, "encoding/json/jsontext": true,
		"github.com/goccy/go-json": true, "github.com/json-iterator/go": true, "github.com/bytedance/sonic": true,
		"github.com/go-json-experiment/json": true, "github.com/tidwall/gjson": true, "github.com/ugorji/go/codec": true,
		module + "/adapters/internal/jsonenc": true, "encoding/xml": false, "strconv": false, "unicode/utf8": false,
		module + "/domain/chat": false} {
		if isJSON(p) != want {
			t.Errorf("isJSON(%s) = %v, want %v", p, !want, want)
		}
	}
}

// TestDomainCodesNoJSON: no type of the domain encodes or decodes itself as JSON, which needs no JSON package to
// import (a MarshalJSON method returns bytes): a wire format is an adapter's.
func TestDomainCodesNoJSON(t *testing.T) {
	methods := regexp.MustCompile(`(?m)^func \([^)]*\) (Marshal|Unmarshal|Append)JSON\(`)
	checked := 0
	for _, p := range listPackages(t) {
		if !within(p.path, "domain") {
			continue
		}
		for _, f := range p.files {
			src, err := os.ReadFile(filepath.Join(p.dir, f))
			if err != nil {
				t.Fatal(err)
			}
			checked++
			if m := methods.Find(src); m != nil {
				t.Errorf("%s/%s: %s", p.path, f, m)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no domain file was read: the layout changed under the rule")
	}
}

// within reports whether p is the module's top-level package dir or below it.
func within(p, dir string) bool {
	root := module + "/" + dir
	return p == root || strings.HasPrefix(p, root+"/")
}
