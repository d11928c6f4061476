package gormstore

import (
	"strings"
	"testing"
)

// Describe never shows a password: neither the URL's own nor one given as a query parameter, which libpq and
// pgx read as well.
func TestDescribe(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ url, want string }{
		{"postgres://sb:hunter2@db:5432/sb", "PostgreSQL postgres://sb:xxxxx@db:5432/sb"},
		{"postgres://sb@db/sb?password=hunter2", "PostgreSQL postgres://sb@db/sb?password=xxxxx"},
		{"postgresql://db/sb?sslmode=disable&password=hunter2&sslpassword=hunter2", "PostgreSQL postgresql://db/sb?password=xxxxx&sslmode=disable&sslpassword=xxxxx"},
		{"postgres://db/sb?sslmode=require", "PostgreSQL postgres://db/sb?sslmode=require"},
		{"postgres://sb:hunter2@db:port/sb", "PostgreSQL (unparsable URL)"},
	} {
		got := Describe(tt.url)
		if got != tt.want || strings.Contains(got, "hunter2") {
			t.Errorf("Describe(%q) = %q, want %q", tt.url, got, tt.want)
		}
	}
}
