package vector

import (
	"math"
	"slices"
	"testing"
)

// TestBase64: a vector goes to base64 as OpenAI writes it and back unchanged, and what is not one is refused.
func TestBase64(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    []float32
		b64  string
	}{
		{"empty", []float32{}, ""},
		{"one", []float32{1}, "AACAPw=="},
		{"several", []float32{0.5, -2, 0}, "AAAAPwAAAMAAAAAA"},
		{"extremes", []float32{math.MaxFloat32, math.SmallestNonzeroFloat32}, "//9/fwEAAAA="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Base64(tc.v); got != tc.b64 {
				t.Fatalf("Base64 = %q, want %q", got, tc.b64)
			}
			back, err := FromBase64([]byte(tc.b64))
			if err != nil || !slices.Equal(back, tc.v) {
				t.Fatalf("FromBase64 = %v, %v; want %v", back, err, tc.v)
			}
		})
	}
	for _, bad := range []string{"!!!", "AAA=", "AACAPwA="} {
		if _, err := FromBase64([]byte(bad)); err == nil {
			t.Errorf("FromBase64(%q): no error", bad)
		}
	}
}
