// Package archtest enforces the hexagon's dependency rule on the real import graph.
package archtest

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/switchboard-ai/switchboard"

type pkg struct {
	path          string
	imports, deps []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}|{{join .Imports ","}}|{{join .Deps ","}}`, "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.Split(line, "|")
		pkgs = append(pkgs, pkg{path: parts[0], imports: split(parts[1]), deps: split(parts[2])})
	}
	return pkgs
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func isStd(p string) bool { return !strings.Contains(strings.SplitN(p, "/", 2)[0], ".") }

func TestDependencyRule(t *testing.T) {
	rules := []struct {
		name  string
		scope func(string) bool
		deps  bool // check transitive deps rather than direct imports
		bad   func(string) bool
	}{
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

// within reports whether p is the module's top-level package dir or below it.
func within(p, dir string) bool {
	root := module + "/" + dir
	return p == root || strings.HasPrefix(p, root+"/")
}
