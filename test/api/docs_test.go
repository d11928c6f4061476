package api_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/test/harness"
	"github.com/switchboard-ai/switchboard/test/readme"
)

// docRoute is a route as the docs name it, in backticks: methods, a path with {parameters}, maybe a query.
var docRoute = regexp.MustCompile("`((?:GET|POST|PATCH|DELETE|PUT)(?:/(?:GET|POST|PATCH|DELETE|PUT))*) (/[^`?% ]*)(?:\\?[^`]*)?`")

// namedRoutes are the routes (method and path) that text names.
func namedRoutes(text string) []string {
	var out []string
	for _, m := range docRoute.FindAllStringSubmatch(text, -1) {
		for _, method := range strings.Split(m[1], "/") {
			out = append(out, method+" "+m[2])
		}
	}
	return out
}

// TestDocsNameEveryRoute: the route table of docs/api.md names every route the gateway mounts, with its full path
// (the base path included), and no route it does not mount; and every route the README and the pages under docs/
// name (`POST /api/v1/chat/completions`), or a curl of theirs calls, is mounted where they say: a gateway's route
// named without its base path (`GET /openapi.json`, a 404) is an error.
func TestDocsNameEveryRoute(t *testing.T) {
	t.Parallel()
	g := harness.Start(t, harness.WithSQLite())
	var mounted []string
	for _, rt := range g.App.Server.Routes() {
		mounted = append(mounted, rt.Method+" "+rt.Path)
	}
	var table []string
	for _, line := range strings.Split(readme.Table(t, "docs/api.md", "| route | key | what |"), "\n") {
		first, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " | ")
		table = append(table, namedRoutes(first)...)
	}
	for _, r := range mounted {
		if !slices.Contains(table, r) {
			t.Errorf("%s is mounted, and docs/api.md's route table does not name it", r)
		}
	}
	for _, r := range table {
		if !slices.Contains(mounted, r) {
			t.Errorf("docs/api.md's route table names %s, which is not mounted", r)
		}
	}

	root := readme.Root(t)
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	curl := regexp.MustCompile(`localhost:8080(/[^\s"'?]*)`)
	for _, doc := range append(docs, filepath.Join(root, "README.md")) {
		raw, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, doc)
		for _, r := range namedRoutes(string(raw)) {
			method, path, _ := strings.Cut(r, " ")
			switch {
			case slices.ContainsFunc(mounted, matches(r)):
			case strings.HasPrefix(path, "/api/v1/"):
				t.Errorf("%s names %s, which is not mounted", name, r)
			case slices.ContainsFunc(mounted, matches(method+" /api/v1"+path)):
				t.Errorf("%s names %s without its base path: it is at /api/v1%s", name, r, path)
			} // others are upstreams' routes (POST /v1/videos)
		}
		for _, m := range curl.FindAllStringSubmatch(string(raw), -1) {
			if !slices.ContainsFunc(mounted, func(rt string) bool { _, p, _ := strings.Cut(rt, " "); return matches("GET " + m[1])("GET " + p) }) {
				t.Errorf("%s calls %s, which is not mounted", name, m[1])
			}
		}
	}
}

// matches reports whether a mounted route is named: the same method, and each segment the same or a {parameter}
// in either.
func matches(named string) func(mounted string) bool {
	return func(mounted string) bool {
		a, b := strings.Split(named, "/"), strings.Split(mounted, "/")
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if a[i] != b[i] && !strings.HasPrefix(a[i], "{") && !strings.HasPrefix(b[i], "{") {
				return false
			}
		}
		return true
	}
}
