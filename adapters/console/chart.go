package console

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/generation"
)

// The charts are inline SVG drawn on the server: bars in a viewBox of chartWidth by chartHeight, coloured by the
// stylesheet. No script and no charting library.
const (
	chartWidth  = 600
	chartHeight = 120
	// shareWidth is the length of a full bar in a table of shares.
	shareWidth = 100
)

// chart is a bar chart of one measure by day.
type chart struct {
	Title, Total string
	Width        int
	Height       int
	Bars         []bar
	First, Last  string
}

// bar is one day's bar, with what its tooltip says.
type bar struct {
	X, Y, W, H float64
	Tip        string
}

// measure is one of the overview's measures of usage: how to read it and how to print it.
type measure struct {
	title  string
	value  func(generation.Usage) int64
	format func(int64) string
}

var measures = []measure{
	{"Spend", func(u generation.Usage) int64 { return int64(u.Cost) }, func(n int64) string { return "$" + domain.Micros(n).Decimal() }},
	{"Calls", func(u generation.Usage) int64 { return u.Requests }, func(n int64) string { return strconv.FormatInt(n, 10) }},
	{"Tokens", func(u generation.Usage) int64 { return u.PromptTokens + u.CompletionTokens },
		func(n int64) string { return strconv.FormatInt(n, 10) }},
}

// dailyChart draws m for each of days (their usage in byDay, absent days being zero).
func dailyChart(m measure, days []time.Time, byDay map[time.Time]generation.Usage) chart {
	c := chart{Title: m.title, Width: chartWidth, Height: chartHeight}
	var top, total int64
	for _, d := range days {
		v := m.value(byDay[d])
		top, total = max(top, v), total+v
	}
	c.Total = m.format(total)
	w := float64(chartWidth) / float64(len(days))
	for i, d := range days {
		v := m.value(byDay[d])
		h := 0.0
		if top > 0 {
			h = float64(v) / float64(top) * (chartHeight - 2)
		}
		c.Bars = append(c.Bars, bar{X: float64(i) * w, Y: chartHeight - h, W: max(w-1, 1), H: h,
			Tip: d.Format("2006-01-02") + ": " + m.format(v)})
	}
	if len(days) > 0 {
		c.First, c.Last = days[0].Format("Jan 2"), days[len(days)-1].Format("Jan 2")
	}
	return c
}

// breakdown is a table of usage by one dimension (model, provider, key), largest spend first.
type breakdown struct {
	Title string
	Rows  []share
}

// share is one row of a breakdown, with the length of its bar (its spend against the largest row's).
type share struct {
	Name  string
	Usage generation.Usage
	Bar   float64
}

// maxShares bounds a breakdown's rows.
const maxShares = 10

func newBreakdown(title string, rows []generation.Activity, name func(generation.ActivityKey) string) breakdown {
	rows = slices.Clone(rows)
	slices.SortFunc(rows, func(a, b generation.Activity) int {
		return cmp.Or(cmp.Compare(b.Cost, a.Cost), cmp.Compare(b.Requests, a.Requests))
	})
	b := breakdown{Title: title}
	for _, r := range rows[:min(len(rows), maxShares)] {
		w := 0.0
		if top := rows[0].Cost; top > 0 {
			w = float64(r.Cost) / float64(top) * shareWidth
		}
		b.Rows = append(b.Rows, share{Name: name(r.ActivityKey), Usage: r.Usage, Bar: w})
	}
	return b
}
