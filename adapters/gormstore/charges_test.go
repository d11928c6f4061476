package gormstore

import "testing"

// TestRebind: each ? becomes $n, numbered from 1, and the text around it is kept, whatever its characters.
func TestRebind(t *testing.T) {
	for _, c := range []struct{ sql, want string }{
		{"", ""},
		{"SELECT 1", "SELECT 1"},
		{"?", "$1"},
		{"a = ? AND b = ?", "a = $1 AND b = $2"},
		{placeholders(2, 6), "($1, $2, $3, $4, $5, $6), ($7, $8, $9, $10, $11, $12)"},
		{"é ?ü?", "é $1ü$2"},
	} {
		if got := rebind(c.sql); got != c.want {
			t.Errorf("rebind(%q) = %q, want %q", c.sql, got, c.want)
		}
	}
}
