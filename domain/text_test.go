package domain

import "testing"

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
