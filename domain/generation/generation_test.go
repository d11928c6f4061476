package generation_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/generation"
)

// eachString calls f with every string of v (through pointers, slices and structs), settable.
func eachString(v reflect.Value, f func(path string, s reflect.Value)) {
	var walk func(path string, v reflect.Value)
	walk = func(path string, v reflect.Value) {
		switch v.Kind() {
		case reflect.String:
			f(path, v)
		case reflect.Pointer:
			if !v.IsNil() {
				walk(path, v.Elem())
			}
		case reflect.Slice:
			for i := range v.Len() {
				walk(path+"[i]", v.Index(i))
			}
		case reflect.Struct:
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					walk(path+"."+v.Type().Field(i).Name, v.Field(i))
				}
			}
		}
	}
	walk("Entry", v)
}

// TestEntryRepaired: every text of an entry's record and content comes back storable (invalid bytes as U+FFFD, NUL
// dropped), the entry it was made from keeps its texts, and an entry already storable comes back as it was. (Its
// holds carry the gateway's own ids.)
func TestEntryRepaired(t *testing.T) {
	clean := fullEntry()
	if got := clean.Repaired(); !reflect.DeepEqual(got, clean) {
		t.Fatalf("a storable entry came back as\n%+v", got)
	}
	const bad, fixed = "a\x00b\xffc", "ab\uFFFDc"
	e := fullEntry()
	e.Holds = nil
	eachString(reflect.ValueOf(&e).Elem(), func(_ string, s reflect.Value) { s.SetString(bad) })
	got := e.Repaired()
	eachString(reflect.ValueOf(&got).Elem(), func(path string, s reflect.Value) {
		if s.String() != fixed || !domain.Storable(s.String()) {
			t.Errorf("%s = %q, want %q", path, s.String(), fixed)
		}
	})
	eachString(reflect.ValueOf(&e).Elem(), func(path string, s reflect.Value) {
		if s.String() != bad {
			t.Errorf("the entry repaired changed: its %s = %q", path, s.String())
		}
	})
}

// TestCut: a text past MaxText is kept to its start, cut at a character, with a note of its length, MaxText bytes
// at most in all; a text cut once is not cut again, and one within the bound is kept whole.
func TestCut(t *testing.T) {
	t.Parallel()
	short := strings.Repeat("é", 100)
	if got := generation.Cut(short, int64(len(short))); got != short {
		t.Fatalf("a short text was cut: %q", got)
	}
	long := strings.Repeat("é", generation.MaxText) // twice the bound in bytes
	got := generation.Cut(long, int64(len(long)))
	note := fmt.Sprintf("\n[cut by the gateway: %d bytes in all, the first ", len(long))
	i := strings.Index(got, note)
	if len(got) > generation.MaxText || i < generation.MaxText-100 || !utf8.ValidString(got) || !strings.HasPrefix(long, got[:i]) {
		t.Fatalf("cut to %d bytes, the note at %d: %q", len(got), i, got[max(0, len(got)-100):])
	}
	if again := generation.Cut(got, int64(len(got))); again != got {
		t.Fatal("a cut text was cut again")
	}
	// Only the start was kept (a streamed answer's record): the note says how long the whole was.
	if got := generation.Cut("abc", 5<<20); !strings.HasPrefix(got, "abc\n[cut by the gateway: 5242880 bytes in all, the first 3 kept]") {
		t.Fatalf("%q", got)
	}
	c := &generation.Content{Input: generation.Input{Messages: []generation.Message{{Role: "user", Content: long}}},
		Output: generation.Output{Completion: "ok"}}
	if b := c.Bounded(); len(b.Input.Messages[0].Content) > generation.MaxText || c.Input.Messages[0].Content != long {
		t.Fatal("Bounded cut nothing, or cut the content it was given")
	}
	small := &generation.Content{Output: generation.Output{Completion: "ok"}}
	if small.Bounded() != small {
		t.Fatal("a content within the bound was copied")
	}
}
