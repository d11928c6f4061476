package domain_test

import (
	"math"
	"testing"

	"github.com/switchboard-ai/switchboard/domain"
)

func TestParseUSD(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    domain.Micros
		wantErr bool
	}{
		{"0", 0, false},
		{"12", 12_000_000, false},
		{"0.6", 600_000, false},
		{".5", 500_000, false},
		{"1.000001", 1_000_001, false},
		{"1.0000010", 1_000_001, false},
		{"1e-3", 1_000, false},
		{"1.0000001", 0, true},
		{"-1", 0, true},
		{"abc", 0, true},
		{"", 0, true},
		{"99999999999999999999", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := domain.ParseUSD(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseUSD(%q) err = %v, wantErr %v", tt.in, err, tt.wantErr)
			}
			if got != tt.want {
				t.Fatalf("ParseUSD(%q) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}

func TestMicrosDecimal(t *testing.T) {
	t.Parallel()
	tests := map[domain.Micros]string{0: "0", 1: "0.000001", 1500: "0.0015", 12_000_000: "12", -3_500_000: "-3.5", 1_234_567: "1.234567"}
	for in, want := range tests {
		if got := in.Decimal(); got != want {
			t.Errorf("%d.Decimal() = %q, want %q", in, got, want)
		}
	}
}

// FuzzMicrosMulDiv: the int64 path answers as the big-integer one, whatever the operands.
func FuzzMicrosMulDiv(f *testing.F) {
	for _, s := range [][3]int64{{15_000_000, 11, 1_000_000}, {-5, 1, 2}, {5, 1, -3}, {1 << 62, 4, 8}, {math.MaxInt64, 1, 1},
		{math.MinInt64, 1, 1}, {3_037_000_499, 3_037_000_499, 7}, {3_037_000_500, 3_037_000_500, 7}, {1, 1, math.MinInt64}} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, m, num, den int64) {
		if den == 0 {
			return
		}
		if got, want := domain.Micros(m).MulDiv(num, den), domain.MulDivBig(domain.Micros(m), num, den); got != want {
			t.Fatalf("%d.MulDiv(%d,%d) = %d, big integers %d", m, num, den, got, want)
		}
	})
}

func TestMicrosMulDiv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		m        domain.Micros
		num, den int64
		want     domain.Micros
	}{
		{15_000_000, 11, 1_000_000, 165},       // $15 per 1M chars × 11 chars
		{600_000, 1, 1_000_000, 1},             // 0.6 µ$ rounds half up to 1
		{600_000, 4, 1_000_000, 2},             // 2.4 → 2
		{100_000, 48_000 * 3, 48_000, 300_000}, // $0.10/s × 3 s of 24 kHz s16 audio
		{1 << 62, 4, 8, 1 << 61},               // no overflow in the product
		{-5, 1, 2, -3},                         // half away from zero
		{5, -1, 2, -3},
		{5, 1, -2, -3},
		{-5, -1, -2, -3},
		{-5, -1, 2, 3},
		{4, 1, 3, 1},
		{5, 1, 3, 2},
		{0, -7, -3, 0},
		{math.MaxInt64, 1, 1, math.MaxInt64},
		{math.MaxInt64, 2, 2, math.MaxInt64},     // past int64 in the product: big integers
		{math.MinInt64, 1, 2, math.MinInt64 / 2}, // the one magnitude int64 cannot hold
		{7, 1, 0, 0},
	}
	for _, tt := range tests {
		if got := tt.m.MulDiv(tt.num, tt.den); got != tt.want {
			t.Errorf("%d.MulDiv(%d,%d) = %d, want %d", tt.m, tt.num, tt.den, got, tt.want)
		}
	}
}

// TestLeft: what a limit leaves once amounts are taken, never below 0 and never wrapping around.
func TestLeft(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		limit   domain.Micros
		amounts []domain.Micros
		want    domain.Micros
	}{
		{1_000_000, []domain.Micros{3}, 999_997},
		{1_000, []domain.Micros{600, 400}, 0},
		{1_000, []domain.Micros{600, 500}, 0},
		{1_000, []domain.Micros{math.MaxInt64, math.MaxInt64}, 0},
		{1_000, nil, 1_000},
	} {
		if got := domain.Left(tt.limit, tt.amounts...); got != tt.want {
			t.Errorf("Left(%d, %v) = %d, want %d", tt.limit, tt.amounts, got, tt.want)
		}
	}
}
