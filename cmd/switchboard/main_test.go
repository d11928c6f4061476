package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/test/testdb"
)

type result struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, func(k string) string { return env[k] }, &out, &errb)
	return result{code, out.String(), errb.String()}
}

func TestCLI(t *testing.T) {
	t.Parallel()
	for _, db := range []struct{ name, url string }{
		{"sqlite", "sqlite:" + filepath.Join(t.TempDir(), "sb.db")},
		{"postgres", testdb.PostgresURL(t)},
	} {
		t.Run(db.name, func(t *testing.T) {
			env := map[string]string{"DATABASE_URL": db.url, "SWITCHBOARD_LOG_LEVEL": "error"}
			if r := runCLI(t, env, "migrate"); r.code != 0 {
				t.Fatalf("migrate: %+v", r)
			}
			r := runCLI(t, env, "keys", "create", "--management", "--name", "admin")
			if r.code != 0 || !strings.HasPrefix(r.stdout, "sk-sb-v1-") || strings.Count(r.stdout, "\n") != 1 {
				t.Fatalf("keys create must print only the key: %+v", r)
			}
			if r := runCLI(t, env, "keys", "create", "--name", "limited", "--limit", "2.5"); r.code != 0 {
				t.Fatalf("keys create --limit: %+v", r)
			}
			if r := runCLI(t, env, "keys", "create", "--name", "x", "--limit", "lots"); r.code != 1 || !strings.Contains(r.stderr, "--limit") {
				t.Fatalf("bad --limit: %+v", r)
			}
			if r := runCLI(t, env, "keys", "create", "--name", "x", "--workspace", "nope"); r.code != 1 || !strings.Contains(r.stderr, "workspace_id") {
				t.Fatalf("unknown --workspace: %+v", r)
			}
			r = runCLI(t, env, "members", "add", "--email", "ada@example.com", "--first-name", "Ada", "--role", "org:admin")
			if r.code != 0 || !strings.HasPrefix(r.stdout, "user_") {
				t.Fatalf("members add: %+v", r)
			}
			if r := runCLI(t, env, "members", "add", "--email", "ada@example.com"); r.code != 1 || !strings.Contains(r.stderr, "already exists") {
				t.Fatalf("duplicate member: %+v", r)
			}
		})
	}
}

func TestCLIUsageAndConfig(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": "sqlite:" + filepath.Join(t.TempDir(), "sb.db")}
	tests := []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"help"}, 0, "usage: switchboard"},
		{[]string{"frobnicate"}, 2, "usage: switchboard"},
		{[]string{"keys"}, 2, "usage"},
		{[]string{"keys", "create", "--nope"}, 2, "usage"},
		{[]string{"config"}, 2, "usage"},
		{[]string{"config", "check"}, 0, "configuration OK: 0 providers, 0 models"},
		{[]string{"--config"}, 2, "--config needs a path"},
		{[]string{"--config", "/nope.yaml", "config", "check"}, 1, "/nope.yaml"},
	}
	for _, tt := range tests {
		r := runCLI(t, env, tt.args...)
		if r.code != tt.code || !strings.Contains(r.stdout+r.stderr, tt.out) {
			t.Errorf("%v: %+v, want code %d and %q", tt.args, r, tt.code, tt.out)
		}
	}
}
