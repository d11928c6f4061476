package jsonenc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/bits"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Scanner reads JSON from b at i, without allocating but for the strings it returns, as encoding/json decodes it
// into a struct (see Object, Str, Text, Int): a decoder of a few fields of a stream's events, one a token, written
// by hand on it reads them in one pass where a reflective decoder copied and allocated every event.
type Scanner struct {
	b []byte
	i int
	// depth is how many objects and arrays the scanner is in.
	depth int
	// key is the last key members read, as written between its quotes (RawKey).
	key []byte
}

// ErrSyntax is JSON that is not; ErrType a value of the wrong type for where it is read.
var (
	ErrSyntax = errors.New("malformed JSON")
	ErrType   = errors.New("a JSON value of the wrong type")
)

// maxDepth bounds the nesting of objects and arrays, as encoding/json's own limit does: the value that holds the
// rest counts.
const maxDepth = 10000

// Is reports whether an object's key is name (lower-case ASCII) as encoding/json matches them: without regard to
// case, Unicode's folding included. A key of name's length matches only by ASCII's case (a character that folds
// to an ASCII letter, as U+017F and U+212A do, is longer than it); a shorter one never does.
func Is(key []byte, name string) bool {
	if len(key) != len(name) {
		return len(key) > len(name) && bytes.EqualFold(key, []byte(name))
	}
	for i, c := range key {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != name[i] {
			return false
		}
	}
	return true
}

// ws skips white space and returns the position of what follows.
func (s *Scanner) ws() int {
	i := s.i
	for i < len(s.b) {
		if c := s.b[i]; c > ' ' || c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			break
		}
		i++
	}
	s.i = i
	return i
}

func (s *Scanner) peek() byte {
	if s.ws() < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// literal consumes word, reporting whether it was there.
func (s *Scanner) literal(word string) bool {
	if s.ws(); bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		s.i += len(word)
		return true
	}
	return false
}

// Null consumes a null, reporting whether the value was one.
func (s *Scanner) Null() bool { return s.peek() == 'n' && s.literal("null") }

// Object calls member with each member's key (valid until the next read), the scanner at its value, which member
// consumes.
func (s *Scanner) Object(member func(key []byte) error) error {
	if s.peek() != '{' {
		return ErrType
	}
	s.i++
	if s.depth++; s.depth > maxDepth {
		return ErrSyntax
	}
	var err error
	if s.peek() == '}' {
		s.i++
	} else {
		err = s.members(member)
	}
	s.depth--
	return err
}

// Members reads an object's members from a key on: Object past its opening brace, less an empty object's end.
func (s *Scanner) Members(member func(key []byte) error) error {
	if s.depth++; s.depth > maxDepth {
		return ErrSyntax
	}
	err := s.members(member)
	s.depth--
	return err
}

func (s *Scanner) members(member func(key []byte) error) error {
	for {
		if s.peek() != '"' {
			return ErrSyntax
		}
		key, escaped, err := s.rawString()
		if err != nil {
			return err
		}
		s.key = key
		if escaped {
			key = unescape(key)
		}
		if s.peek() != ':' {
			return ErrSyntax
		}
		s.i++
		if err := member(key); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return ErrSyntax
		}
	}
}

// Array calls elem for each element, the scanner at it; null is an empty array.
func (s *Scanner) Array(elem func(i int) error) error {
	if s.Null() {
		return nil
	}
	if s.peek() != '[' {
		return ErrType
	}
	s.i++
	if s.depth++; s.depth > maxDepth {
		return ErrSyntax
	}
	var err error
	if s.peek() == ']' {
		s.i++
	} else {
		err = s.elements(elem)
	}
	s.depth--
	return err
}

// elements reads an array's elements, Array past its opening bracket.
func (s *Scanner) elements(elem func(i int) error) error {
	for i := 0; ; i++ {
		if err := elem(i); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return ErrSyntax
		}
	}
}

// rawString reads a string at its opening quote and returns what is between the quotes, and whether it holds
// escapes (checked to be JSON's).
func (s *Scanner) rawString() (raw []byte, escaped bool, err error) {
	s.i++
	start := s.i
	for {
		if s.plain(); s.i == len(s.b) {
			return nil, false, ErrSyntax
		}
		switch s.b[s.i] {
		case '"':
			s.i++
			return s.b[start : s.i-1], escaped, nil
		case '\\':
			escaped = true
			if s.i+1 >= len(s.b) {
				return nil, false, ErrSyntax
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if s.i+6 > len(s.b) {
					return nil, false, ErrSyntax
				}
				if _, ok := hex4(s.b[s.i+2 : s.i+6]); !ok {
					return nil, false, ErrSyntax
				}
				s.i += 6
			default:
				return nil, false, ErrSyntax
			}
		default: // a control character
			return nil, false, ErrSyntax
		}
	}
}

// plain moves past the bytes of a string that need no look (all but a quote, a backslash and a control
// character), eight at a time while it can.
func (s *Scanner) plain() {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	b, i := s.b, s.i
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		q, bs := x^(ones*'"'), x^(ones*'\\')
		// the high bit of each byte below 0x20, and of each zero byte in q or bs (a quote or a backslash): exact
		// up to the first one, as a subtraction's borrow only runs upwards from such a byte
		if m := ((x-ones*0x20)&^x | (q-ones)&^q | (bs-ones)&^bs) & highs; m != 0 {
			s.i = i + bits.TrailingZeros64(m)/8
			return
		}
	}
	for i < len(b) && !special[b[i]] {
		i++
	}
	s.i = i
}

// special marks the bytes plain stops at.
var special = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// Str reads a string into dst, leaving it for null.
func (s *Scanner) Str(dst *string) error {
	if s.Null() {
		return nil
	}
	text, _, err := s.Text()
	if err == nil {
		*dst = string(text)
	}
	return err
}

// Text reads a string and returns its text, as encoding/json decodes it: the bytes between its quotes, within
// those the scanner reads (shared), when they hold no escape and are UTF-8, else a decoded copy. Any other value,
// null too, is the wrong type.
func (s *Scanner) Text() (text []byte, shared bool, err error) {
	if s.peek() != '"' {
		if err := s.skip(); err != nil {
			return nil, false, err
		}
		return nil, false, ErrType
	}
	raw, escaped, err := s.rawString()
	if err != nil || !escaped && utf8.Valid(raw) {
		return raw, err == nil, err
	}
	return unescape(raw), false, nil
}

// Bool reads a boolean into dst, leaving it for null.
func (s *Scanner) Bool(dst *bool) error {
	switch {
	case s.Null():
	case s.literal("true"):
		*dst = true
	case s.literal("false"):
		*dst = false
	default:
		if err := s.skip(); err != nil {
			return err
		}
		return ErrType
	}
	return nil
}

// Raw reads a value of any kind, checked to be JSON, and returns a copy of its bytes, as encoding/json fills a
// json.RawMessage: null is "null".
func (s *Scanner) Raw() ([]byte, error) {
	v, err := s.Value()
	return append([]byte(nil), v...), err
}

// Value is Raw without the copy: the value's bytes within those the scanner reads.
func (s *Scanner) Value() ([]byte, error) {
	start := s.ws()
	if err := s.skip(); err != nil {
		return nil, err
	}
	return s.b[start:s.i], nil
}

// Int reads an integer into dst, leaving it for null; a number with a fraction or an exponent, or past int64, is
// the wrong type.
func (s *Scanner) Int(dst *int64) error {
	if s.Null() {
		return nil
	}
	v, err := s.Value()
	if err != nil {
		return err
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return ErrType
	}
	*dst = n
	return nil
}

// skip consumes one value of any kind, checking that it is JSON.
func (s *Scanner) skip() error {
	switch c := s.peek(); {
	case c == '"':
		_, _, err := s.rawString()
		return err
	case c == '{':
		return s.Object(func([]byte) error { return s.skip() })
	case c == '[':
		return s.Array(func(int) error { return s.skip() })
	case c == 't' && s.literal("true"), c == 'f' && s.literal("false"), c == 'n' && s.literal("null"):
		return nil
	case c == '-' || '0' <= c && c <= '9':
		return s.number()
	}
	return ErrSyntax
}

// number consumes a number as JSON writes it: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *Scanner) number() error {
	digits := func() bool {
		start := s.i
		for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
			s.i++
		}
		return s.i > start
	}
	if s.b[s.i] == '-' {
		s.i++
	}
	if s.i < len(s.b) && s.b[s.i] == '0' {
		s.i++
	} else if !digits() {
		return ErrSyntax
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if !digits() {
			return ErrSyntax
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if !digits() {
			return ErrSyntax
		}
	}
	return nil
}

// unescape decodes the escapes of a string rawString checked, as encoding/json does: a \u escape of half a
// surrogate pair, or invalid UTF-8, becomes U+FFFD.
func unescape(raw []byte) []byte {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			if c < utf8.RuneSelf {
				out = append(out, c)
				i++
				continue
			}
			r, size := utf8.DecodeRune(raw[i:])
			out = utf8.AppendRune(out, r)
			i += size
			continue
		}
		switch raw[i+1] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, _ := hex4(raw[i+2 : i+6])
			i += 6
			if utf16.IsSurrogate(r) {
				r2 := utf8.RuneError
				if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					r2, _ = hex4(raw[i+2 : i+6])
				}
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					r = dec
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
			continue
		default: // " \ /
			out = append(out, raw[i+1])
		}
		i += 2
	}
	return out
}

// Intact reports whether raw, the bytes between a JSON string's quotes, spell their text exactly: they are UTF-8, and
// no \u escape is half of a surrogate pair without its other half right after it. encoding/json (and unescape) read
// either into U+FFFD, a text the writer did not write; an escape that is not JSON's is not intact either. What
// follows a leading run of plain ASCII is read once by utf8.Valid, and past it only at backslashes.
func Intact(raw []byte) bool {
	for i, c := range raw { // most are short, ASCII and without escapes: read past those here
		if c >= utf8.RuneSelf || c == '\\' {
			return intact(raw[i:])
		}
	}
	return true
}

// intact is Intact from a character's start on.
func intact(raw []byte) bool {
	if !utf8.Valid(raw) {
		return false
	}
	for i := 0; ; {
		j := bytes.IndexByte(raw[i:], '\\')
		if j < 0 {
			return true
		}
		if i += j; i+1 >= len(raw) {
			return false
		}
		if raw[i+1] != 'u' {
			i += 2 // \" \\ \/ \b ...: the escaped byte is never the start of another escape
			continue
		}
		r, ok := escapedRune(raw, i)
		if i += 6; !ok {
			return false
		}
		if !utf16.IsSurrogate(r) {
			continue
		}
		// as unescape reads it: a high half with a low half escaped right after it, read together
		r2, ok := escapedRune(raw, i)
		if !ok || utf16.DecodeRune(r, r2) == utf8.RuneError {
			return false
		}
		i += 6
	}
}

// escapedRune reads the \uXXXX escape at raw[i:], if there is one.
func escapedRune(raw []byte, i int) (rune, bool) {
	if i+6 > len(raw) || raw[i] != '\\' || raw[i+1] != 'u' {
		return 0, false
	}
	return hex4(raw[i+2 : i+6])
}

// hex4 reads the four hex digits of a \u escape.
func hex4(b []byte) (r rune, ok bool) {
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// NewScanner reads b from its start.
func NewScanner(b []byte) Scanner { return Scanner{b: b} }

// Pos is where the scanner is in b; Seek moves it there.
func (s *Scanner) Pos() int { return s.i }

func (s *Scanner) Seek(i int) { s.i = i }

// Document reads the scanner's bytes as one object, as encoding/json decodes a document into a struct: null is
// no member, and nothing but white space may follow.
func (s *Scanner) Document(member func(key []byte) error) error {
	if s.Null() && s.End() {
		return nil
	}
	err := s.Object(member)
	if err == nil && !s.End() {
		err = ErrSyntax
	}
	return err
}

// Held reads an object that encoding/json would hold by pointer into v, with has saying whether it is there: null
// clears both, an object reads its members into what v holds (a second one of the same key into the first).
func Held[T any](s *Scanner, has *bool, v *T, member func(key []byte) error) error {
	if s.Null() {
		var zero T
		*has, *v = false, zero
		return nil
	}
	*has = true
	return s.Object(member)
}

// Skip consumes one value of any kind, checking that it is JSON.
func (s *Scanner) Skip() error { return s.skip() }

// RawKey is the key Object (or Members) last passed to its callback as it was written between its quotes, escapes
// and all (see Intact): within the callback, until the member's value is read.
func (s *Scanner) RawKey() []byte { return s.key }

// Peek returns the first byte of the next value, past white space ('"', '[', '{', 'n'...; 0 at the end): its
// kind, for a member that may be of more than one (a chat message's content, a string or an array of parts),
// which is then read once, by the reader of its kind.
func (s *Scanner) Peek() byte { return s.peek() }

// End reports whether nothing but white space is left: a whole value was read, with nothing after it.
func (s *Scanner) End() bool { return s.ws() == len(s.b) }
