package domain

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Text that a database can store: valid UTF-8 without NUL. PostgreSQL refuses both in text columns, so every
// string that may reach a store passes one of these two rules at the edge where it enters.

// CheckText is the rule for a caller's own input: text the database cannot store is a 400 naming the field.
func CheckText(field, s string) error {
	if Storable(s) {
		return nil
	}
	return Invalid(field, "must be valid UTF-8 without NUL characters")
}

// CheckLength bounds a caller's string: more than max characters is a 400 naming the field and the bound.
func CheckLength(field, s string, max int) error {
	if len(s) > max && utf8.RuneCountInString(s) > max {
		return Invalid(field, fmt.Sprintf("must be at most %d characters", max)).With("max_length", max)
	}
	return nil
}

// Storable reports whether s is valid UTF-8 without NUL.
func Storable(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}

// RepairText is the rule for metadata the caller does not choose deliberately (a header such as User-Agent, an
// upstream's text): invalid bytes become U+FFFD and NUL is dropped, so the value can be stored as seen.
func RepairText(s string) string {
	if Storable(s) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
}
