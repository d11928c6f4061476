package jsonenc

import (
	"strings"
	"testing"
)

func TestBounds(t *testing.T) {
	items := func(n int, item string) string { return strings.TrimSuffix(strings.Repeat(item+",", n), ",") }
	for _, tt := range []struct {
		in     string
		bounds Bounds
		want   *Overflow
	}{
		{`[` + items(3, `{}`) + `]`, Bounds{Entries: 3}, nil},
		{`[` + items(4, `{}`) + `]`, Bounds{Entries: 3}, &Overflow{}},
		{`{"a":{"b":[1,[` + items(4, `null`) + `]]}}`, Bounds{Entries: 3}, &Overflow{Path: "a.b[1]"}},
		{`{"a":1,"a":2,"a":3,"a":4}`, Bounds{Entries: 3}, &Overflow{}},
		{`{"a\u0000b":{"c":[` + items(4, `""`) + `]}}`, Bounds{Entries: 3}, &Overflow{Path: "a\x00b.c"}},
		{`[[` + items(3, `[]`) + `],[` + items(3, `[]`) + `]]`, Bounds{Entries: 3, Values: 7}, &Overflow{Values: true}},
		{`[[` + items(3, `[]`) + `],[` + items(2, `[]`) + `]]`, Bounds{Entries: 3, Values: 7}, nil},
		{`{"a":[` + items(10, `1`) + `]}`, Bounds{Values: 10}, &Overflow{Values: true}},
		{`{"a":[` + items(10, `1`) + `]}`, Bounds{}, nil},
		{`[` + items(4, `{}`) + `,x]`, Bounds{Entries: 3}, &Overflow{}}, // refused before the bad byte is read
		{`[x,` + items(4, `{}`) + `]`, Bounds{Entries: 3}, nil},         // not JSON: the decoder's to say
		{`"x"`, Bounds{Entries: 1, Values: 1}, nil},
	} {
		got := tt.bounds.Check([]byte(tt.in))
		if (got == nil) != (tt.want == nil) || got != nil && *got != *tt.want {
			t.Errorf("%+v.Check(%.60s) = %+v, want %+v", tt.bounds, tt.in, got, tt.want)
		}
	}
}

// TestBoundsAllocations: a value within the bounds is checked without allocating (but for a key with escapes,
// which the scanner undoes into a copy).
func TestBoundsAllocations(t *testing.T) {
	b := []byte(`{"a":[{},[],"x",1,null,{"b":[true]}],"c":{"d":{"e":[[[]]]}}}`)
	if n := testing.AllocsPerRun(100, func() { _ = (Bounds{Entries: 10, Values: 100}).Check(b) }); n != 0 {
		t.Errorf("%v allocations", n)
	}
}

// TestCount: the items of the array at the scanner, the scanner left where it was.
func TestCount(t *testing.T) {
	for in, want := range map[string]int{
		`[]`: 0, `null`: 0, `{}`: 0, `"x"`: 0, `[1]`: 1, ` [1, [2, 3], {"a": [4]}, "]"] `: 4, `[1,2,x,3]`: 2, `[1,2`: 2,
	} {
		s := NewScanner([]byte(in))
		if got := s.Count(); got != want || s.Pos() != 0 {
			t.Errorf("Count(%s) = %d at %d, want %d at 0", in, got, s.Pos(), want)
		}
	}
}
