package generation_test

import (
	"reflect"
	"testing"

	"github.com/switchboard-ai/switchboard/domain"
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
