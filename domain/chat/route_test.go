package chat_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/domain/chat"
)

func TestRoute(t *testing.T) {
	t.Parallel()
	eps := []catalog.Endpoint{{Provider: "a"}, {Provider: "b"}, {Provider: "c"}}
	for _, tc := range []struct {
		provider string
		want     string // the providers tried, in order; "404" for none
	}{
		{`{}`, "abc"},
		{`{"order":["c","A"]}`, "cab"},
		{`{"order":["c","x"],"allow_fallbacks":false}`, "c"},
		{`{"allow_fallbacks":false}`, "a"},
		{`{"only":["b","c"],"order":["c"]}`, "cb"},
		{`{"ignore":["a"]}`, "bc"},
		{`{"only":["a"],"ignore":["a"]}`, "404"},
		{`{"order":["x"],"allow_fallbacks":false}`, "404"},
		{`{"sort":"price","options":{"a":{"k":1}}}`, "abc"},
		{`{"order":[],"only":[],"ignore":[]}`, "abc"},
	} {
		req, err := chat.Parse(chat.Body{"model": json.RawMessage(`"m"`), "messages": json.RawMessage(`[{"role":"user","content":"x"}]`),
			"provider": json.RawMessage(tc.provider)})
		if err != nil {
			t.Fatalf("%s: %v", tc.provider, err)
		}
		got, err := req.Route.Apply("m", eps)
		var names strings.Builder
		for _, ep := range got {
			names.WriteString(ep.Provider)
		}
		if err != nil {
			names.WriteString("404")
			if !strings.Contains(err.Error(), "provider") {
				t.Errorf("%s: error %v does not name provider", tc.provider, err)
			}
		}
		if names.String() != tc.want {
			t.Errorf("%s: tried %q, want %q", tc.provider, names.String(), tc.want)
		}
	}
	for _, bad := range []string{`{"order":"a"}`, `{"allow_fallbacks":"no"}`, `{"only":[1]}`, `{"ignore":["a\u0000"]}`} {
		_, err := chat.Parse(chat.Body{"model": json.RawMessage(`"m"`), "messages": json.RawMessage(`[{"role":"user","content":"x"}]`),
			"provider": json.RawMessage(bad)})
		if err == nil || !strings.Contains(err.Error(), "provider") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
