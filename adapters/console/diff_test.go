package console

import (
	"slices"
	"strings"
	"testing"
)

func TestLineDiff(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, a, b string
		want       string
	}{
		{"same", "x\ny", "x\ny", " x| y"},
		{"changed line", "a\nb\nc", "a\nB\nc", " a|-b|+B| c"},
		{"added at end", "a", "a\nb", " a|+b"},
		{"removed at start", "a\nb", "b", "-a| b"},
		{"empty to text", "", "a", "-|+a"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, l := range lineDiff(tt.a, tt.b) {
				got = append(got, l.Op+l.Text)
			}
			if s := strings.Join(got, "|"); s != tt.want {
				t.Fatalf("%q", s)
			}
		})
	}
	long := strings.Repeat("x\n", maxDiffLines+5)
	d := lineDiff(long, long+"y")
	if n := len(d); n < maxDiffLines || !slices.ContainsFunc(d, func(l diffLine) bool { return l.Op == "+" && l.Text == "y" }) {
		t.Fatalf("a long diff: %d lines", n)
	}
}
