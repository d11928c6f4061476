package domain

import (
	"fmt"
	"strconv"
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

// MaxCallerID bounds the ids a caller attaches to an inference call, session_id and user, which every
// generation record of the call keeps.
const MaxCallerID = 256

// CheckCallerIDs is the one rule for a call's session_id and user: more than MaxCallerID characters is a 400
// naming the field.
func CheckCallerIDs(sessionID, user string) error {
	if err := CheckLength("session_id", sessionID, MaxCallerID); err != nil {
		return err
	}
	return CheckLength("user", user, MaxCallerID)
}

// CheckCall is the rule for the model and the caller's ids that an inference call names: text the records can
// store (CheckText), and ids within CheckCallerIDs.
func CheckCall(model, sessionID, user string) error {
	for _, f := range []struct{ name, v string }{{"model", model}, {"user", user}, {"session_id", sessionID}} {
		if err := CheckText(f.name, f.v); err != nil {
			return err
		}
	}
	return CheckCallerIDs(sessionID, user)
}

// MaxNumberLength and MaxExponent keep a free-form number (decoded as json.Number and kept as written) within
// what every store can hold: PostgreSQL's jsonb refuses numbers past its numeric range, such as 1e-999999.
const (
	MaxNumberLength = 64
	MaxExponent     = 300
)

// CheckNumber is the rule for a number the caller sends in a free-form object: past the bounds it is a 400
// naming the field.
func CheckNumber(field, n string) error {
	mantissa, exp, hasExp := strings.Cut(strings.ToLower(n), "e")
	e, err := strconv.Atoi(strings.TrimPrefix(exp, "+"))
	if len(n) > MaxNumberLength || mantissa == "" || hasExp && (err != nil || e < -MaxExponent || e > MaxExponent) {
		return Invalid(field, fmt.Sprintf("must be a number of at most %d characters with an exponent from -%d to %d",
			MaxNumberLength, MaxExponent, MaxExponent))
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
