package inbound

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/chat"
)

// TestDecodeFields: a body's fields as encoding/json decodes an object into a map, and a body that is no object a
// 400 in the gateway's words.
func TestDecodeFields(t *testing.T) {
	f, err := DecodeFields([]byte(" {\"a\":1,\"a\":[2], \"\\u0062\":\"x\",\"c\xff\":null} "))
	if err != nil || len(f) != 3 || string(f["a"]) != `[2]` || string(f["b"]) != `"x"` || string(f["c\uFFFD"]) != `null` {
		t.Fatalf("%q, %v", f, err)
	}
	for body, want := range map[string]string{
		``:             "request body: must be a JSON object",
		`  `:           "request body: must be a JSON object",
		`null`:         "request body: must be a JSON object",
		`[1]`:          "request body: must be a JSON object",
		`"x"`:          "request body: must be a JSON object",
		`{"a":1`:       "malformed JSON: unexpected end of the body",
		`{"a":"x`:      "malformed JSON: unexpected end of the body",
		`{"a" 1}`:      "malformed JSON at byte 6: unexpected '1'",
		`{"a":1} x`:    "malformed JSON at byte 9: unexpected 'x'",
		"{\"a\":\x01}": "malformed JSON at byte 6: unexpected byte 0x01",
	} {
		_, err := DecodeFields([]byte(body))
		var de *domain.Error
		if !errors.As(err, &de) || de.Kind != domain.KindInvalid || de.Code != "invalid_json" || de.Msg != want {
			t.Errorf("%q: %v, want %s", body, err, want)
		}
	}
}

// TestUnder: the fields laid over a configuration win when set, null ones do not, those left out stay out, and
// the values laid go as encoding/json writes them without escaping <, > and &: the bytes counted.
func TestUnder(t *testing.T) {
	f := Fields{"a": json.RawMessage(`1`), "b": json.RawMessage(`null`), "model": json.RawMessage(`"m"`)}
	config := map[string]any{"a": 2.0, "b": "<&>", "c": []any{true}, "model": "x"}
	ref := chat.PresetRef{Slug: "p", Field: "preset"}
	size, err := f.Under(config, func(k string) bool { return k == "model" }, ref, 10, 100)
	if err != nil || len(f) != 4 || string(f["a"]) != `1` || string(f["b"]) != `"<&>"` || string(f["c"]) != `[true]` || string(f["model"]) != `"m"` {
		t.Fatalf("%q, %v", f, err)
	}
	if want := int64(len("a1b\"<&>\"c[true]model\"m\"")); size != want || f.Size() != want {
		t.Errorf("size %d (%d), want %d", size, f.Size(), want)
	}
	for _, tc := range []struct {
		maxFields int
		maxBytes  int64
		meta      string
	}{{3, 100, "max_fields"}, {10, 10, "max_bytes"}} {
		g := Fields{"a": json.RawMessage(`1`)}
		_, err := g.Under(config, func(string) bool { return false }, ref, tc.maxFields, tc.maxBytes)
		var de *domain.Error
		if !errors.As(err, &de) || de.Meta["field"] != "preset" || de.Meta[tc.meta] == nil || len(g) != 1 {
			t.Errorf("past %s: %v, fields %q", tc.meta, err, g)
		}
	}
}

// TestNamesField: the spellings of a field an upstream may read as it (encoding/json's folding, a letter's upper or
// lower case, a key cut at a NUL), and others.
func TestNamesField(t *testing.T) {
	for key, want := range map[string]bool{"model": true, "MODEL": true, "Model": true, "mode\u029f": false, "model\x00x": true,
		"\x00model": false, "modelx": false, "mode": false, "ſtream": true, "\u212aey": true, "max_completıon_tokens": true,
		"max_completİon_tokens": true, "stream-options": false} {
		field := ""
		for _, f := range []string{"model", "stream", "key", "max_completion_tokens", "stream_options"} {
			if NamesField(key, f) {
				field = f
			}
		}
		if (field != "") != want {
			t.Errorf("%q names %q, want a field: %v", key, field, want)
		}
	}
	if name, ok := spelledAs("Temperature", []string{"model"}, []string{"temperature"}); !ok || name != "temperature" {
		t.Errorf("spelledAs: %q %v", name, ok)
	}
	if _, ok := spelledAs("temperature", []string{"temperature"}); ok {
		t.Error("a field spelled as it is")
	}
}
