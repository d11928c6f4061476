package chat

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/switchboard-ai/switchboard/domain/jsonenc/jsonenctest"
)

var unmarshalSeeds = []string{`"abc"`, `""`, `"a\"b"`, `"a\\b"`, `"é😀"`, "\"\xff\"", "\"a\xc3\"", `"\u00e9"`, "\"a\nb\"", "\"a\x00\"",
	`"a`, `a"`, `"`, `"a"b"`, `"a" `, ` "a"`, `true`, `false`, `null`, `1`, `"true"`, `tru`, `true `, `falsey`, `[]`, `{}`,
	`0`, `-0`, `42`, ` 7 `, `-9223372036854775808`, `9223372036854775808`, `1.5`, `1e2`, `-1e-999`, `1e999`, `01`, `1.`,
	`.5`, `-`, `1 2`, `0x10`, `"5"`, `null `, `nul`}

// FuzzUnmarshal holds unmarshal to json.Unmarshal: the same string, boolean, integer or number, and an error for
// the same values.
func FuzzUnmarshal(f *testing.F) {
	for _, s := range unmarshalSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkUnmarshal(t, raw) })
}

func TestUnmarshal(t *testing.T) {
	for _, s := range unmarshalSeeds {
		checkUnmarshal(t, []byte(s))
	}
}

func checkUnmarshal(t *testing.T, raw []byte) {
	t.Helper()
	var s, ws string
	var b, wb bool
	if err, werr := unmarshal(raw, &s), json.Unmarshal(raw, &ws); (err == nil) != (werr == nil) || s != ws {
		t.Fatalf("%q as a string: %q (error %v), encoding/json's %q (%v)", raw, s, err, ws, werr)
	}
	if err, werr := unmarshal(raw, &b), json.Unmarshal(raw, &wb); (err == nil) != (werr == nil) || b != wb {
		t.Fatalf("%q as a boolean: %v (error %v), encoding/json's %v (%v)", raw, b, err, wb, werr)
	}
	checkHeld[int64](t, raw, "an integer")
	checkHeld[float64](t, raw, "a number")
}

// checkHeld holds unmarshal to json.Unmarshal for a value held by pointer, from nil and from a value set before
// (what json.Unmarshal leaves of it after an error is no value).
func checkHeld[V comparable](t *testing.T, raw []byte, kind string) {
	t.Helper()
	for _, before := range []*V{nil, new(V)} {
		got, want := before, before
		err, werr := unmarshal(raw, &got), json.Unmarshal(raw, &want)
		if (err == nil) != (werr == nil) || err == nil && ((got == nil) != (want == nil) || got != nil && *got != *want) {
			t.Fatalf("%q as %s from %v: %v (error %v), encoding/json's %v (%v)", raw, kind, before, got, err, want, werr)
		}
	}
}

var streamOptionsSeeds = []string{`null`, `{}`, `{"include_usage":true}`, `{"include_usage":false}`, `{"include_usage":null}`,
	`{"include_usage":true,"include_usage":null}`, `{"INCLUDE_USAGE":true}`, `{"include_\u0075sage":true}`,
	"{\"include_u\u017fage\":true}", `{"other":[1,{"a":"b"}],"include_usage":true}`, `{"include_usage":"yes"}`, `true`, `[]`,
	`{"include_usage":true`, `{"include_usage":true}}`, `{"include_usage" true}`, `{"a":1,}`, "{\"\xff\":true}"}

// FuzzStreamOptions holds includeUsage to json.Unmarshal into a struct of include_usage alone: the same value, and
// an error for the same stream_options. Its seeds run with every go test, as a fuzz target's do.
func FuzzStreamOptions(f *testing.F) { jsonenctest.Seeds(f, streamOptionsSeeds, checkStreamOptions) }

func checkStreamOptions(t *testing.T, raw []byte) {
	t.Helper()
	if len(bytes.TrimSpace(raw)) == 0 { // a member of a body always has a value; none reads as absent (present)
		return
	}
	var want struct {
		IncludeUsage *bool `json:"include_usage"`
	}
	werr := json.Unmarshal(raw, &want)
	got, err := includeUsage(Body{"stream_options": raw})
	if (err == nil) != (werr == nil) || err == nil && got != (want.IncludeUsage != nil && *want.IncludeUsage) {
		t.Fatalf("%q: %v (error %v), encoding/json's %v (%v)", raw, got, err, want.IncludeUsage, werr)
	}
}
