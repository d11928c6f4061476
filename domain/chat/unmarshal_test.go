package chat

import (
	"encoding/json"
	"testing"
)

var unmarshalSeeds = []string{`"abc"`, `""`, `"a\"b"`, `"a\\b"`, `"é😀"`, "\"\xff\"", "\"a\xc3\"", `"\u00e9"`, "\"a\nb\"", "\"a\x00\"",
	`"a`, `a"`, `"`, `"a"b"`, `"a" `, ` "a"`, `true`, `false`, `null`, `1`, `"true"`, `tru`, `true `, `falsey`, `[]`, `{}`}

// FuzzUnmarshal holds unmarshal to json.Unmarshal: the same string or boolean, and an error for the same values.
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
}
