package jsonenc

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// intactCases are the seeds of FuzzIntact and the cases of TestIntact: the bytes between a string's quotes, and
// whether they spell their text exactly.
var intactCases = []struct {
	raw  string
	want bool
}{
	{``, true},
	{`plain ascii`, true},
	{"caf\xc3\xa9 \xf0\x9f\x98\x80", true},
	{"\xef\xbf\xbd", true},  // U+FFFD written as itself: the caller's
	{`\ufffd \uFFFD`, true}, // and escaped
	{`\ud83d\ude00`, true},  // a surrogate pair
	{`\uD83D\uDE00x`, true}, // in upper case
	{`\\ud800`, true},       // an escaped backslash, then text
	{`\"\\\/\b\f\n\r\t`, true},
	{`\u0000`, true}, // NUL is the domain's to refuse, naming the field
	{`\u00e9\u20ac`, true},
	{"a\xffb", false},           // invalid UTF-8
	{"\xc3", false},             // cut short
	{"\xed\xa0\x80", false},     // a surrogate encoded as UTF-8
	{"\xf4\x90\x80\x80", false}, // past U+10FFFF
	{"\xc0\xaf", false},         // overlong
	{`\ud800`, false},           // a lone high half
	{`a\udc00`, false},          // a lone low half
	{`\ud800\u0041`, false},     // a high half before something else
	{`\ude00\ud83d`, false},     // the halves in the wrong order
	{`\ud800\ud800\udc00`, false},
	{`\ud83d\ude00\ud800`, false},
	{`\ud800\n`, false},
	{`\\\ud800`, false}, // an escaped backslash, then a lone half
}

func TestIntact(t *testing.T) {
	for _, tt := range intactCases {
		if got := Intact([]byte(tt.raw)); got != tt.want {
			t.Errorf("Intact(%q) = %v, want %v", tt.raw, got, tt.want)
		}
		if got := mendedByEncodingJSON(t, tt.raw); got == tt.want {
			t.Errorf("%q: the case says intact %v, encoding/json mends it: %v", tt.raw, tt.want, got)
		}
	}
}

// TestIntactMalformed: escapes that are not JSON's are not intact, and never read past the bytes.
func TestIntactMalformed(t *testing.T) {
	for _, raw := range []string{`\`, `a\`, `\u`, `\u12`, `\u12G4`, `\ud800\`, `\ud800\u`, `\ud800\udc0`, `\ud800\udcZZ`} {
		if Intact([]byte(raw)) {
			t.Errorf("Intact(%q) = true", raw)
		}
	}
}

// FuzzIntact holds Intact to encoding/json: a string is intact when it is UTF-8 and encoding/json's text of it
// holds no U+FFFD but those the string spells (as the character, or escaped).
func FuzzIntact(f *testing.F) {
	for _, tt := range intactCases {
		f.Add(tt.raw)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		s := NewScanner([]byte(`"` + raw + `"`))
		if _, _, err := s.Text(); err != nil || !s.End() {
			return // not one JSON string
		}
		if got, mended := Intact([]byte(raw)), mendedByEncodingJSON(t, raw); got == mended {
			t.Fatalf("Intact(%q) = %v, encoding/json mends it: %v", raw, got, mended)
		}
	})
}

// mendedByEncodingJSON reports whether encoding/json reads the string raw spells as another text: it is not
// UTF-8, or its text holds more U+FFFD than raw spells.
func mendedByEncodingJSON(t *testing.T, raw string) bool {
	t.Helper()
	var text string
	if err := json.Unmarshal([]byte(`"`+raw+`"`), &text); err != nil {
		t.Fatalf("%q: %v", raw, err)
	}
	return !utf8.ValidString(raw) || strings.Count(text, "\uFFFD") > spelled(raw)
}

// spelled counts the U+FFFD raw spells: as the character, or as \ufffd (not an escaped backslash then "ufffd").
func spelled(raw string) int {
	n := strings.Count(raw, "\uFFFD")
	for i := 0; i+1 < len(raw); i++ {
		if raw[i] == '\\' {
			if raw[i+1] == 'u' && i+6 <= len(raw) && strings.EqualFold(raw[i+2:i+6], "fffd") {
				n++
			}
			i++
		}
	}
	return n
}

// TestRawKey: within Object's callback, RawKey is the key as written, escapes and invalid bytes and all, where the
// key passed is its text.
func TestRawKey(t *testing.T) {
	s := NewScanner([]byte("{\"a\":{\"b\\u0063\":1},\"\\ud800\":2,\"x\xff\":3}"))
	var raw, keys []string
	err := s.Object(func(key []byte) error {
		raw, keys = append(raw, string(s.RawKey())), append(keys, string(key))
		return s.Skip()
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", `\ud800`, "x\xff"}; strings.Join(raw, "|") != strings.Join(want, "|") {
		t.Errorf("raw keys %q, want %q", raw, want)
	}
	if want := []string{"a", "\uFFFD", "x\xff"}; strings.Join(keys, "|") != strings.Join(want, "|") {
		t.Errorf("keys %q, want %q", keys, want)
	}
}
