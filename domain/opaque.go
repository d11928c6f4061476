package domain

import "unicode/utf8"

// Opaque is a value of a caller's request that the domain carries without reading it, to be passed on unchanged:
// an extra field, a content part of a kind the gateway does not translate, a tool's schema, a tool choice. Its
// bytes are as the caller's wire format wrote the value; only adapters make one (from a request) and read one
// (into an upstream's). The one rule the domain holds it to is that it is text (CheckOpaque).
type Opaque []byte

// CheckOpaque refuses an opaque value that is not UTF-8, naming its field: the wire formats the gateway speaks are
// text, so an upstream would refuse the request, or read the bytes as something else.
func CheckOpaque(field string, v Opaque) error {
	if !utf8.Valid(v) {
		return Invalid(field, "must be valid UTF-8")
	}
	return nil
}

// Number is a number of a free-form value (provider.options, a preset's configuration) as the adapter that decoded
// it keeps it: exactly as written (String), and its value (Float64). A free-form value holds its numbers as
// Numbers or as float64s.
type Number interface {
	String() string
	Float64() (float64, error)
}
