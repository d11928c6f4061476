//go:build linux

package main

import (
	"math"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	inf := math.Inf(1)
	at := func(counts ...float64) []bucket {
		bounds := []float64{.00001, .000025, .00005, .0001, inf}
		out := make([]bucket, len(bounds))
		for i := range bounds {
			out[i] = bucket{bounds[i], counts[i]}
		}
		return out
	}
	for _, tc := range []struct {
		name          string
		before, after []bucket
		want          time.Duration
	}{
		{"within the first bucket", at(0, 0, 0, 0, 0), at(10, 10, 10, 10, 10), 5 * time.Microsecond},
		{"interpolated in its bucket", at(0, 0, 0, 0, 0), at(0, 20, 60, 100, 100), 43750 * time.Nanosecond},
		{"earlier calls left out", at(5, 5, 5, 5, 5), at(5, 5, 15, 15, 15), 37500 * time.Nanosecond},
		{"past the last bound", at(0, 0, 0, 0, 0), at(0, 0, 0, 1, 10), 100 * time.Microsecond},
		{"no calls", at(1, 1, 1, 1, 1), at(1, 1, 1, 1, 1), -1},
		{"mismatched reads", at(0, 0, 0, 0, 0), at(1, 1, 1, 1, 1)[:4], -1},
	} {
		if got := median(tc.before, tc.after); got != tc.want {
			t.Errorf("%s: median = %v, want %v", tc.name, got, tc.want)
		}
	}
}
