package domain

import (
	"strings"
	"testing"
)

func TestText(t *testing.T) {
	cases := []struct {
		in       string
		storable bool
		repaired string
	}{
		{"", true, ""},
		{"héllo", true, "héllo"},
		{"a\x00b", false, "ab"},
		{"a\xffb", false, "a\uFFFDb"},
		{"\x00\xfe\xff", false, "\uFFFD"},
	}
	for _, c := range cases {
		if got := Storable(c.in); got != c.storable {
			t.Errorf("Storable(%q) = %v, want %v", c.in, got, c.storable)
		}
		if got := RepairText(c.in); got != c.repaired {
			t.Errorf("RepairText(%q) = %q, want %q", c.in, got, c.repaired)
		}
		err := CheckText("input", c.in)
		if (err == nil) != c.storable {
			t.Errorf("CheckText(%q) = %v", c.in, err)
		}
		if err != nil && (KindOf(err) != KindInvalid || err.(*Error).Meta["field"] != "input") {
			t.Errorf("CheckText(%q) = %#v, want a 400 naming input", c.in, err)
		}
	}
}

// TestCheckCallerIDs: a call's session_id and user are bounded in characters (not bytes), each error naming its
// field; speech, chat and video share the rule.
func TestCheckCallerIDs(t *testing.T) {
	for _, tt := range []struct {
		session, user, field string
	}{
		{"", "", ""},
		{strings.Repeat("s", 256), strings.Repeat("é", 256), ""},
		{strings.Repeat("s", 257), "", "session_id"},
		{"", strings.Repeat("é", 257), "user"},
		{strings.Repeat("s", 257), strings.Repeat("u", 257), "session_id"},
	} {
		err := CheckCallerIDs(tt.session, tt.user)
		var got string
		if de, ok := err.(*Error); ok && de.Kind == KindInvalid {
			got, _ = de.Meta["field"].(string)
		} else if err != nil {
			t.Fatalf("%v is not a 400", err)
		}
		if got != tt.field {
			t.Errorf("session %d, user %d characters: refused %q, want %q", len(tt.session), len(tt.user), got, tt.field)
		}
	}
}
