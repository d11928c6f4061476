package harness

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
)

// Shape renders the structure of a decoded JSON value: objects as {key:shape,...} with sorted keys, arrays as
// [shape of each distinct element shape], and scalars as string, number, boolean or null. Tests pin whole bodies
// with it: every key present, with its type, and nothing else.
func Shape(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number, float64:
		return "number"
	case []any:
		seen := map[string]bool{}
		var parts []string
		for _, e := range v {
			if s := Shape(e); !seen[s] {
				seen[s] = true
				parts = append(parts, s)
			}
		}
		return "[" + strings.Join(parts, "|") + "]"
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + ":" + Shape(v[k])
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	return fmt.Sprintf("unknown(%T)", v)
}

// AssertShape fails unless v has exactly the shape want (whitespace in want is ignored).
func AssertShape(t testing.TB, v any, want string) {
	t.Helper()
	want = strings.Join(strings.Fields(want), "")
	if got := Shape(v); got != want {
		t.Fatalf("JSON shape mismatch\n got: %s\nwant: %s", got, want)
	}
}

// AssertError fails unless r is the spec's error envelope with error.code equal to the status, and returns the
// error object.
func AssertError(t testing.TB, r Response, status int) map[string]any {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status = %d, want %d; body %s", r.Status, status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("error Content-Type = %q, want application/json", ct)
	}
	e, ok := r.JSON(t)["error"].(map[string]any)
	if !ok {
		t.Fatalf("no error object in %s", r.Body)
	}
	if code, _ := e["code"].(json.Number).Int64(); int(code) != status {
		t.Fatalf("error.code = %v, want %d", e["code"], status)
	}
	if msg, _ := e["message"].(string); msg == "" {
		t.Fatalf("error.message is empty in %s", r.Body)
	}
	return e
}
