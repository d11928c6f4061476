package httpapi

import "testing"

// TestValidRange: the Range headers RFC 9110 calls valid byte ranges are forwarded; any other (a last before its
// first, another unit, a malformed spec) is ignored.
func TestValidRange(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		h     string
		valid bool
	}{
		{"bytes=0-499", true},
		{"bytes=500-", true},
		{"bytes=-500", true},
		{"bytes=3-3", true},
		{"bytes=0-0,-1", true},
		{"bytes=0-1 , 5-6,", true},
		{"BYTES=0-1", true},
		{"bytes=99999999999999999999-", true},
		{"bytes=0099-100", true},
		{"bytes=9-3", false},
		{"bytes=0-1,9-3", false},
		{"bytes=100-099", false},
		{"bytes=99999999999999999999-1", false},
		{"bytes=-", false},
		{"bytes=", false},
		{"bytes=,", false},
		{"bytes=a-b", false},
		{"bytes=1-2-3", false},
		{"bytes=+1-2", false},
		{"bytes=1", false},
		{"items=0-1", false},
		{"0-1", false},
		{"", false},
	} {
		if got := validRange(tt.h); got != tt.valid {
			t.Errorf("validRange(%q) = %v, want %v", tt.h, got, tt.valid)
		}
	}
}
