package jsonenc

import (
	"encoding/json"
	"math"
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

// TestAppendFloat holds AppendFloat to encoding/json's float64 encoding, exponents and all, and its refusal of
// what JSON cannot carry.
func TestAppendFloat(t *testing.T) {
	for _, f := range []float64{0, math.Copysign(0, -1), 1, 0.25, 1.5, 4, -2.5, 1e-6, 9.99e-7, 1e-9, 1.5e-300, 1e20, 1e21, 123456789e20,
		-1e21, math.MaxFloat64, math.SmallestNonzeroFloat64, 0.1 + 0.2} {
		want, _ := json.Marshal(f)
		got, err := AppendFloat(nil, f)
		if err != nil || string(got) != string(want) {
			t.Errorf("%v: got %s, %v; want %s", f, got, err, want)
		}
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if got, err := AppendFloat(nil, f); err == nil {
			t.Errorf("%v: got %s, want an error", f, got)
		}
	}
}
