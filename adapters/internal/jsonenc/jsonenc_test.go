package jsonenc

import (
	"encoding/json"
	"testing"
)

// FuzzAppendString holds AppendString to encoding/json's encoding of the same string.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "w0 ", `"\`, "<>&", "\x00\x07\b\f\n\r\t\x1f\x7f", "\u2028\u2029", "é😀", "\xff\xfe", "a\xc3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
	})
}
