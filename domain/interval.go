package domain

import (
	"fmt"
	"time"
)

// Interval is a reset window for spending limits: calendar windows in UTC, weeks starting on Monday.
type Interval string

const (
	IntervalNone    Interval = ""
	IntervalDaily   Interval = "daily"
	IntervalWeekly  Interval = "weekly"
	IntervalMonthly Interval = "monthly"
)

// ParseInterval accepts daily, weekly or monthly.
func ParseInterval(s string) (Interval, error) {
	switch i := Interval(s); i {
	case IntervalDaily, IntervalWeekly, IntervalMonthly:
		return i, nil
	}
	return "", fmt.Errorf("must be one of daily, weekly, monthly")
}

// Start is the beginning of the window that holds t; the zero time for IntervalNone (all time).
func (i Interval) Start(t time.Time) time.Time {
	t = t.UTC()
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	switch i {
	case IntervalDaily:
		return day
	case IntervalWeekly:
		return day.AddDate(0, 0, -((int(day.Weekday()) + 6) % 7))
	case IntervalMonthly:
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	return time.Time{}
}

// Patch is one field of a partial update: absent (keep), null (clear) or a value (set).
type Patch[T any] struct {
	Set   bool
	Value *T
}

// Apply writes the patch into dst when the field was present.
func (p Patch[T]) Apply(dst **T) {
	if p.Set {
		*dst = p.Value
	}
}
