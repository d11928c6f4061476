// Package jsonenctest holds what is read by hand (decoders written on jsonenc.Scanner) to encoding/json.
package jsonenctest

import (
	"reflect"
	"testing"
)

// Same fails t unless a hand decoder's reading of an input (got, err) and encoding/json's (want, werr) agree: both
// refuse it, or both read the same value. input names the input in the failure.
func Same[T any](t testing.TB, input string, got T, err error, want T, werr error) {
	t.Helper()
	switch {
	case (err == nil) != (werr == nil):
		t.Fatalf("%s: error %v, encoding/json's %v", input, err, werr)
	case err == nil && !reflect.DeepEqual(got, want):
		t.Fatalf("%s:\n got %+v\nwant %+v", input, got, want)
	}
}

// Seeds runs check on each seed, and adds them to f's corpus: a fuzz target's seeds run in every go test.
func Seeds(f *testing.F, seeds []string, check func(t *testing.T, data []byte)) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(check)
}
