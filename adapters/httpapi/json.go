package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/switchboard-ai/switchboard/adapters/inbound"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/ports"
)

var (
	errTooLarge = domain.E(domain.KindTooLarge, "body_too_large", "request body is larger than the server accepts")
	errNoBody   = inbound.ErrNoBody
)

// bindJSON decodes the body into dst with messages that name the problem: the byte offset of a syntax error,
// the field of a type mismatch, a list past domain.MaxListEntries. Unknown fields are ignored, as clients send extras.
func bindJSON(c *gin.Context, dst any) error {
	body, err := readBody(c.Request.Body, make([]byte, 0, 512))
	return decodeBounded(body, err, dst)
}

// decodeBounded is decodeJSON of a body checked first (inbound.CheckFree: domain.MaxListEntries and
// domain.MaxValues, and every string and key valid UTF-8 with no escaped half of a surrogate pair, which encoding/json
// would mend into U+FFFD past any later check's sight): every body but a chat request's, whose wire format bounds
// each of its lists, is decoded whole.
func decodeBounded(body []byte, readErr error, dst any) error {
	if readErr == nil {
		if err := inbound.CheckFree("", body); err != nil {
			return err
		}
	}
	return decodeJSON(body, readErr, dst)
}

// decodeJSON is bindJSON's decoding, of body as it was read: readErr is the error that ended the read (nil at
// the end of the body), which the decoder meets where the body stops, as it would reading the body itself.
func decodeJSON(body []byte, readErr error, dst any) error {
	var r io.Reader = bytes.NewReader(body)
	if readErr != nil {
		r = io.MultiReader(r, failedRead{readErr})
	}
	dec := json.NewDecoder(r)
	dec.UseNumber() // free-form values keep their numbers exactly
	err := dec.Decode(dst)
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			return domain.E(domain.KindInvalid, "invalid_json", "request body: unexpected data after the JSON object")
		}
		return nil
	}
	return jsonError(err, body, dst)
}

// readBody appends the whole of r to buf. A read error (the body limit, a caller gone) comes back as it is. A full
// buffer is doubled: append grows a large one by a quarter, so that reading a 10 MiB body allocated some 50 MB.
func readBody(r io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, max(cap(buf), 512))
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// failedRead ends what was read of a body with the error that ended the read.
type failedRead struct{ err error }

func (f failedRead) Read([]byte) (int, error) { return 0, f.err }

// jsonError turns an error of reading body or decoding it into dst into the caller's 400 (413 for a body too
// large), in the gateway's own words: encoding/json's text names the gateway's Go types and its parser's states,
// which mean nothing to a caller (inbound.Malformed). The cause is kept for the log.
func jsonError(err error, body []byte, dst any) error {
	var (
		maxErr  *http.MaxBytesError
		typeErr *json.UnmarshalTypeError
	)
	if errors.As(err, &maxErr) {
		return errTooLarge.WithMsg(fmt.Sprintf("request body is larger than %d bytes", maxErr.Limit)).Wrap(err)
	}
	if m := inbound.Malformed(err, body); m != nil {
		return m
	}
	if errors.As(err, &typeErr) {
		if m, ok := findMismatch(body, reflect.TypeOf(dst), typeErr.Field); ok {
			return domain.Invalid(m.path, "must be "+m.want+", not "+m.got).Wrap(err)
		}
		return domain.Invalid(typeErr.Field, "must be "+jsonTypeName(typeErr.Type)+", not "+valueName(typeErr.Value)).Wrap(err)
	}
	return domain.E(domain.KindInvalid, "invalid_json", "malformed JSON").Wrap(err)
}

// valueKind is encoding/json's name of the type of the JSON value b (UnmarshalTypeError.Value), by its first
// byte: never the value itself, which may be long.
func valueKind(b []byte) string {
	if len(b) == 0 {
		return "value"
	}
	switch b[0] {
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	case '{':
		return "object"
	case '[':
		return "array"
	case 'n':
		return "null"
	}
	return "number"
}

// valueName is encoding/json's name of a value's type (UnmarshalTypeError.Value: "string", "bool", "number 1.5"
// ...) in the API's words.
func valueName(v string) string {
	kind, _, _ := strings.Cut(v, " ")
	return inbound.KindName(kind)
}

// jsonTypeName is what a value decoded into t must be, in the API's words: a type's own (jsonType), or its kind's.
func jsonTypeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if h, ok := reflect.New(t).Interface().(interface{ jsonType() string }); ok {
		return h.jsonType()
	}
	return inbound.TypeName(t)
}

// deref reads an optional string field: "" when absent.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// opt is a request field that tells an absent key (keep) from an explicit null (clear) from a value (set).
type opt[T any] struct {
	set bool
	val *T
}

func (o *opt[T]) UnmarshalJSON(b []byte) error {
	o.set = true
	if bytes.Equal(b, []byte("null")) {
		o.val = nil
		return nil
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	o.val = &v
	return nil
}

// valueType is the type of the value an opt holds: what a value that does not fit it must be.
func (opt[T]) valueType() reflect.Type { return reflect.TypeFor[T]() }

func (o opt[T]) patch() domain.Patch[T] { return domain.Patch[T]{Set: o.set, Value: o.val} }

// keep reads a field that cannot be cleared: absent is nil (keep), a value is that value, and null is a 400
// naming the field.
func (o opt[T]) keep(field string) (*T, error) {
	if o.set && o.val == nil {
		return nil, domain.Invalid(field, "cannot be cleared: null is not allowed")
	}
	return o.val, nil
}

// usd is money on the wire: a JSON number of dollars, exact to the micro-dollar.
type usd domain.Micros

func (u usd) MarshalJSON() ([]byte, error) { return []byte(domain.Micros(u).Decimal()), nil }

func (u *usd) UnmarshalJSON(b []byte) error {
	m, err := domain.ParseUSD(string(b))
	if kind := valueKind(b); kind != "number" || err != nil {
		return &json.UnmarshalTypeError{Value: kind, Type: reflect.TypeFor[usd]()}
	}
	*u = usd(m)
	return nil
}

func (usd) jsonType() string { return "a non-negative number of dollars with at most 6 decimals" }

func usdPtr(m *domain.Micros) *usd { return (*usd)(m) }

// timestamp renders times as ISO 8601 in UTC with milliseconds, like JavaScript's toISOString.
func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func timestampPtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := timestamp(*t)
	return &s
}

// queryInt reads an optional integer query parameter within [lo, hi]; def when absent or empty.
func queryInt(c *gin.Context, name string, def, lo, hi int) (int, error) {
	raw, ok := c.GetQuery(name)
	if !ok || raw == "" {
		return def, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < lo || n > hi {
		return 0, domain.Invalid(name, fmt.Sprintf("must be an integer from %d to %d", lo, hi))
	}
	return n, nil
}

// decimal reads a number written as 1 to maxDigits decimal digits: no sign, no space, no point.
func decimal(s string, maxDigits int) (int, bool) {
	if s == "" || len(s) > maxDigits || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n, true
}

// queryBool reads an optional true/false query parameter.
func queryBool(c *gin.Context, name string) (bool, error) {
	switch raw := strings.ToLower(c.Query(name)); raw {
	case "", "false", "0":
		return false, nil
	case "true", "1":
		return true, nil
	}
	return false, domain.Invalid(name, "must be true or false")
}

// pageQuery reads limit (default 50, at most 100) and offset (default 0).
func pageQuery(c *gin.Context) (limit, offset int, err error) {
	if limit, err = queryInt(c, "limit", 50, 1, 100); err != nil {
		return 0, 0, err
	}
	if offset, err = queryInt(c, "offset", 0, 0, 1<<31-1); err != nil {
		return 0, 0, err
	}
	return limit, offset, nil
}

// listPage answers a paged list: limit and offset from the query, {"data": [...], "total_count": n} in the body.
func listPage[T, R any](c *gin.Context, fetch func(ports.Page) ([]T, int, error), conv func(T) R) {
	limit, offset, err := pageQuery(c)
	if err != nil {
		writeError(c, err)
		return
	}
	items, total, err := fetch(ports.Page{Limit: limit, Offset: offset})
	if err != nil {
		writeError(c, err)
		return
	}
	out := make([]R, len(items))
	for i, it := range items {
		out[i] = conv(it)
	}
	c.JSON(http.StatusOK, gin.H{"data": out, "total_count": total})
}

// data answers {"data": v} with status.
func data(c *gin.Context, status int, v any) { c.JSON(status, gin.H{"data": v}) }
