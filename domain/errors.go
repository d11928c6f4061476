// Package domain holds the vocabulary shared by every module: classified errors and money.
// It imports nothing but the standard library.
package domain

import (
	"errors"
	"time"
)

// Kind classifies a failure by whose fault it is and what the caller can do about it.
// Each kind has one HTTP status (Status); only the HTTP adapter writes it on the wire.
type Kind uint8

const (
	KindInternal            Kind = iota // a bug or an unexpected infrastructure failure
	KindInvalid                         // the caller's input is wrong
	KindUnauthenticated                 // no credentials, or credentials that match nothing
	KindForbidden                       // known caller, not allowed
	KindNotFound                        // no such resource (or one the caller may not see)
	KindConflict                        // the resource is not in a state that allows this
	KindGone                            // the resource existed and has expired
	KindTooLarge                        // the request body is over the limit
	KindPaymentRequired                 // no credits left, or a key's spending limit reached
	KindRateLimited                     // the gateway's own limit or every upstream said 429
	KindUpstream                        // every upstream attempt failed
	KindTimeout                         // the last upstream attempt timed out
	KindOverloaded                      // upstreams reported overload
	KindUnavailable                     // the gateway cannot serve now (draining, database down)
	KindRangeNotSatisfiable             // a byte range outside the content
	KindUpgradeRequired                 // the request asks a protocol upgrade the route does not make, or lacks one it needs
)

// ErrShutdown is the cause of a request cut by the gateway's own shutdown timeout, as opposed to its caller
// hanging up: such a call is recorded as cut by the shutdown and billed for what was delivered.
var ErrShutdown = E(KindUnavailable, "shutting_down", "the gateway is shutting down; try again").RetryIn(time.Second)

// statuses maps kinds to the HTTP statuses of the spec's error table. The status is part of the interface
// (error.code equals it, and generation records keep what the caller got), so it lives with the kinds; the HTTP
// adapter is the only one that writes it on the wire.
var statuses = map[Kind]int{
	KindInvalid:             400,
	KindUnauthenticated:     401,
	KindPaymentRequired:     402,
	KindForbidden:           403,
	KindNotFound:            404,
	KindConflict:            409,
	KindGone:                410,
	KindTooLarge:            413,
	KindRangeNotSatisfiable: 416,
	KindUpgradeRequired:     426,
	KindRateLimited:         429,
	KindInternal:            500,
	KindUpstream:            502,
	KindUnavailable:         503,
	KindTimeout:             524, // the reference's "provider timed out at the edge"
	KindOverloaded:          529, // the reference's "provider overloaded"
}

// Status is the HTTP status of a kind.
func (k Kind) Status() int {
	if s, ok := statuses[k]; ok {
		return s
	}
	return 500
}

// StatusOf is the HTTP status of an error: its kind's, or 500 when it is unclassified.
func StatusOf(err error) int { return KindOf(err).Status() }

// Error is a classified failure. Code is a stable machine-readable reason; Msg is safe to show clients.
type Error struct {
	Kind Kind
	Code string
	Msg  string
	// Meta is client-safe detail (field names, the guardrail that refused, the provider that failed).
	Meta map[string]any
	// RetryAfter, when positive, tells the caller when to try again.
	RetryAfter time.Duration
	// Logged marks a failure that is logged where it arises, once per episode (a full spool, a database gone):
	// each answer of it is logged at debug level only, not once a call.
	Logged bool
	// Err is the cause: logged, never sent to clients.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Msg + ": " + e.Err.Error()
	}
	return e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// Is matches by Code, so copies made by Wrap or With still match their sentinel.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Wrap returns a copy that carries cause.
func (e *Error) Wrap(cause error) *Error {
	c := *e
	c.Err = cause
	return &c
}

// WithMsg returns a copy with another client-safe message.
func (e *Error) WithMsg(msg string) *Error {
	c := *e
	c.Msg = msg
	return &c
}

// With returns a copy whose metadata also holds key=value.
func (e *Error) With(key string, value any) *Error {
	c := *e
	c.Meta = make(map[string]any, len(e.Meta)+1)
	for k, v := range e.Meta {
		c.Meta[k] = v
	}
	c.Meta[key] = value
	return &c
}

// RetryIn returns a copy that tells the caller to try again after d (Retry-After on the wire).
func (e *Error) RetryIn(d time.Duration) *Error {
	c := *e
	c.RetryAfter = d
	return &c
}

// E builds a classified error.
func E(k Kind, code, msg string) *Error { return &Error{Kind: k, Code: code, Msg: msg} }

// Invalid is the 400 for one bad field: the message and the metadata both name it.
func Invalid(field, msg string) *Error {
	return E(KindInvalid, "invalid_request", field+": "+msg).With("field", field)
}

// KindOf reports the kind of err; unclassified errors are internal.
func KindOf(err error) Kind {
	var de *Error
	if errors.As(err, &de) {
		return de.Kind
	}
	return KindInternal
}

// ValidateSlug checks a URL-safe slug: 1 to 64 lowercase letters, digits and hyphens, not starting or ending
// with a hyphen.
func ValidateSlug(field, s string) error {
	ok := len(s) >= 1 && len(s) <= 64 && s[0] != '-' && s[len(s)-1] != '-'
	for i := 0; ok && i < len(s); i++ {
		c := s[i]
		ok = c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-'
	}
	if !ok {
		return Invalid(field, "must be 1 to 64 lowercase letters, digits and hyphens, not starting or ending with a hyphen")
	}
	return nil
}
