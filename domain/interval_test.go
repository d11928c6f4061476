package domain_test

import (
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
)

func TestIntervalStart(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 18, 15, 4, 5, 0, time.FixedZone("X", -5*3600)) // Wed 20:04:05 UTC
	day := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
	tests := []struct {
		i    domain.Interval
		at   time.Time
		want time.Time
	}{
		{domain.IntervalDaily, at, day(2026, 3, 18)},
		{domain.IntervalWeekly, at, day(2026, 3, 16)},                                   // Monday
		{domain.IntervalWeekly, day(2026, 3, 22).Add(23 * time.Hour), day(2026, 3, 16)}, // Sunday belongs to the week before
		{domain.IntervalWeekly, day(2026, 3, 16), day(2026, 3, 16)},
		{domain.IntervalMonthly, at, day(2026, 3, 1)},
		{domain.IntervalDaily, time.Date(2026, 3, 18, 23, 30, 0, 0, time.FixedZone("Y", -3600)), day(2026, 3, 19)}, // UTC decides
		{domain.IntervalNone, at, time.Time{}},
	}
	for _, tt := range tests {
		if got := tt.i.Start(tt.at); !got.Equal(tt.want) {
			t.Errorf("%q.Start(%v) = %v, want %v", tt.i, tt.at, got, tt.want)
		}
	}
	if _, err := domain.ParseInterval("hourly"); err == nil {
		t.Error("ParseInterval(hourly) accepted")
	}
}

func TestPatch(t *testing.T) {
	t.Parallel()
	v, w := 1, 2
	cur := &v
	domain.Patch[int]{}.Apply(&cur)
	if cur != &v {
		t.Fatal("an absent patch changed the value")
	}
	domain.Patch[int]{Set: true, Value: &w}.Apply(&cur)
	if *cur != 2 {
		t.Fatal("a set patch did not set")
	}
	domain.Patch[int]{Set: true}.Apply(&cur)
	if cur != nil {
		t.Fatal("a null patch did not clear")
	}
}
