package inbound

import (
	"encoding/json"
	"strings"
	"testing"
)

// own is a value's own members in these tests, as a Responses item's.
func own(member string) bool { return member == "type" || member == "id" }

// TestReadCarriedPayloads: an encoded payload (a base64 data URL, base64 as a payload member holds it) is no text,
// while a data member of text (a text document's) is, and so is a value of base64's alphabet elsewhere.
func TestReadCarriedPayloads(t *testing.T) {
	t.Parallel()
	b64 := strings.Repeat("QUJD", 100)
	for _, tt := range []struct{ name, raw, text string }{
		{"a base64 source", `{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"` + b64 + `"}}`,
			"type\nbase64\nmedia_type\napplication/pdf\ndata"},
		{"a text source", `{"type":"document","source":{"type":"text","data":"mail ada@example.com"}}`,
			"type\ntext\ndata\nmail ada@example.com"},
		{"a file's data URL", `{"type":"file","file":{"file_data":"data:application/pdf;base64,` + b64 + `"}}`, "file_data"},
		{"a short data member", `{"type":"x","data":"QUJD"}`, "QUJD"},
		{"a file's raw base64", `{"type":"input_file","file_data":"` + b64 + `"}`, ""},
		{"base64's alphabet elsewhere", `{"type":"x","output":"` + b64 + `"}`, b64},
		{"a data member not base64", `{"type":"x","data":"` + b64 + `A"}`, b64 + "A"},
	} {
		left := MaxCarried
		c, ok := ReadCarried(json.RawMessage(tt.raw), &left, own)
		if !ok || c.Text != tt.text {
			t.Errorf("%s: %q, want %q", tt.name, c.Text, tt.text)
		}
	}
}

// FuzzReadCarried: reading a value never panics, and its text holds every string of the value (but the values of
// its own members and encoded payloads), as a reading of the whole tree finds them.
func FuzzReadCarried(f *testing.F) {
	for _, s := range []string{`{"type":"x","output":"a"}`, `{"a":{"id":["b",{"c":"d"}]},"id":"e"}`, `{"n":1e400}`, `{"a":`, `[]`, `"s"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, item string) {
		left := MaxCarried
		a, ok := ReadCarried(json.RawMessage(item), &left, own)
		if !ok || a.Text == item {
			return
		}
		d := json.NewDecoder(strings.NewReader(item))
		d.UseNumber()
		var v any
		if d.Decode(&v) != nil {
			return
		}
		var walk func(v any, top bool)
		walk = func(v any, top bool) {
			switch v := v.(type) {
			case string:
				if !encoded([]byte(v)) && !base64Data([]byte(v)) && !strings.Contains(a.Text, v) {
					t.Fatalf("%q: text %q misses %q", item, a.Text, v)
				}
			case []any:
				for _, e := range v {
					walk(e, false)
				}
			case map[string]any:
				for k, e := range v {
					if s, isString := e.(string); top && own(k) && isString || k == "image_url" && strings.HasPrefix(s, "data:image/") {
						continue
					}
					walk(e, false)
				}
			}
		}
		walk(v, true)
	})
}
