package api_test

import (
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/test/harness"
)

// TestTextNotMended: a string of a management body (object keys included) or a query value that is not valid
// UTF-8, raw bytes or an escaped half of a surrogate pair (which encoding/json would read as U+FFFD), is a 400 naming
// the field, and nothing is stored; intact text (a surrogate pair, U+FFFD as written, an escaped backslash) is
// stored exactly as written.
func TestTextNotMended(t *testing.T) {
	t.Parallel()
	harness.Dialects(t, func(t *testing.T, db harness.Option) {
		g := harness.Start(t, db)
		ws := g.Workspace(t, "team")
		for _, tt := range []struct {
			method, path, body string
			want               string // the error's message, from its start
		}{
			{"POST", "/workspaces", "{\"name\":\"a\xffb\",\"slug\":\"ff\"}", "name: must be valid UTF-8"},
			{"POST", "/workspaces", "{\"name\":\"\xed\xa0\x80\",\"slug\":\"cesu\"}", "name: must be valid UTF-8"},
			{"POST", "/workspaces", `{"name":"a\ud800b","slug":"high"}`, "name: must be valid UTF-8"},
			{"POST", "/workspaces", `{"name":"\udc00","slug":"low"}`, "name: must be valid UTF-8"},
			{"POST", "/workspaces", "{\"name\":\"k\",\"slug\":\"key\",\"x\xff\":1}", "(a key): must be valid UTF-8"},
			{"PATCH", "/workspaces/" + ws, `{"description":"\ud83d"}`, "description: must be valid UTF-8"},
			{"POST", "/keys", "{\"name\":\"k\",\"external\":{\"user\":\"\xff\"}}", "external.user: must be valid UTF-8"},
			{"POST", "/presets/p/chat/completions", `{"model":"a/b","metadata":{"\udfff":"1"}}`, "metadata.(a key): must be valid UTF-8"},
			{"GET", "/workspaces?x=a%FFb", "", "x: must be valid UTF-8"},
			{"GET", "/keys?x=%ED%A0%80", "", "x: must be valid UTF-8"},
			{"GET", "/keys?a%FF=1", "", "query parameter names: must be valid UTF-8"},
			{"GET", "/keys?workspace_id=%FF", "", "workspace_id: "},
		} {
			var body any
			if tt.body != "" {
				body = tt.body
			}
			e := harness.AssertError(t, g.Do(t, tt.method, tt.path, g.Admin, body), 400)
			if msg := e["message"].(string); !strings.HasPrefix(msg, tt.want) {
				t.Errorf("%s %s %q: message %q, want %q", tt.method, tt.path, tt.body, msg, tt.want)
			}
		}

		intact := "caf\u00e9 \U0001F600 \uFFFD \\ud800"
		r := g.Do(t, "POST", "/workspaces", g.Admin, `{"name":"caf\u00e9 \ud83d\ude00 \ufffd \\ud800","slug":"intact"}`)
		if r.Status != 201 && r.Status != 200 {
			t.Fatalf("intact text: %d %s", r.Status, r.Body)
		}
		list := g.Do(t, "GET", "/workspaces?limit=100", g.Admin, nil)
		names := []string{}
		for _, w := range list.JSON(t)["data"].([]any) {
			names = append(names, w.(map[string]any)["name"].(string))
		}
		if got := strings.Join(names, "|"); strings.Count(got, "\uFFFD") != 1 || !strings.Contains(got, intact) {
			t.Errorf("workspaces %q: want the intact name %q and no other U+FFFD", names, intact)
		}
	})
}
