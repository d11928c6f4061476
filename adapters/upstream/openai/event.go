package openai

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/bits"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/switchboard-ai/switchboard/domain/chat"
)

// event is what the gateway reads of one chat.completion.chunk event: the first choice's delta and finish reason,
// the usage, and whether it is an error object instead.
type event struct {
	chat.Chunk
	// finish is the first choice's finish_reason as sent; failed reports an error object.
	finish string
	failed bool
	// reasoning and reasoningContent are the delta's two names for its reasoning, joined in Reasoning.
	reasoning, reasoningContent string
}

// decoder reads the events of one stream, each in a single pass over its bytes, keeping only what event holds:
// one event a token, so a reflective decoder (goccy/go-json before) was most of the gateway's CPU and
// allocations per token (pprof), copying the event and allocating the chunk, its choices and their deltas every
// time. It accepts what encoding/json would decode into those fields, and reads it as encoding/json does: keys
// matched without regard to case, unknown members skipped (and checked to be JSON), a value of the wrong type an
// error (an error object's message that is not a string among them); a null leaves a string or a number as it
// was and clears a list or an object that encoding/json holds by pointer, and a key given twice reads into what
// the first one set (a list's items into its items).
//
// An upstream begins every event of a stream with the same members, which the gateway does not read (OpenAI's
// id, object, created and model: half of what an event of one token holds). head is the run of such members
// that began the last event read whole, up to and with the comma before its first member read: an event that
// begins with the same bytes is read from there, as reading them again would leave it where it is then.
type decoder struct{ head []byte }

func (d *decoder) decode(data []byte) (ev event, err error) {
	s := scanner{b: data}
	if s.null() && s.ws() == len(s.b) {
		return ev, nil // as encoding/json decodes null into a struct: nothing
	}
	var usage *chat.Usage // allocated once an event has one: most have none
	// read reads the member of key when the gateway reads it, and reports whether it did.
	read := func(key []byte) (bool, error) {
		switch {
		case is(key, "choices"):
			n := 0
			err := s.array(func(i int) error {
				n = i + 1
				if i == 0 {
					return s.choice(&ev)
				}
				var rest event
				return s.choice(&rest)
			})
			if n == 0 { // null or []: no choices
				ev = event{failed: ev.failed}
			}
			return true, err
		case is(key, "usage"):
			if s.null() {
				usage = nil
				return true, nil
			}
			if usage == nil {
				usage = new(chat.Usage)
			}
			return true, s.usage(usage)
		case is(key, "error"):
			if s.null() {
				ev.failed = false
				return true, nil
			}
			ev.failed = true
			return true, s.object(func(key []byte) error {
				if is(key, "message") {
					var message string
					return s.str(&message)
				}
				return s.skip(0)
			})
		}
		return false, nil
	}
	// skipped is where the members skipped from the event's start end, until a member is read (-1 then).
	skipped := 0
	member := func(key []byte) error {
		ok, err := read(key)
		switch {
		case !ok:
			err = s.skip(0)
			if skipped >= 0 {
				skipped = s.i
			}
		case skipped > 0: // the first member read: the head ends with the comma before it
			d.head = append(d.head, s.b[:skipped+bytes.IndexByte(s.b[skipped:], ',')+1]...)
			fallthrough
		default:
			skipped = -1
		}
		return err
	}
	if len(d.head) > 0 && bytes.HasPrefix(data, d.head) {
		s.i, skipped = len(d.head), -1
		err = s.members(member)
	} else {
		d.head = d.head[:0]
		err = s.object(member)
	}
	if err == nil && s.ws() < len(s.b) {
		err = errSyntax
	}
	ev.Usage = usage
	ev.Reasoning = ev.reasoning + ev.reasoningContent
	return ev, err
}

func (s *scanner) choice(ev *event) error {
	if s.null() {
		return nil
	}
	return s.object(func(key []byte) error {
		switch {
		case is(key, "delta"):
			return s.delta(ev)
		case is(key, "finish_reason"):
			ev.finish = "" // held by pointer: null clears it
			return s.str(&ev.finish)
		}
		return s.skip(0)
	})
}

// delta reads a choice's delta.
func (s *scanner) delta(ev *event) error {
	if s.null() {
		return nil
	}
	return s.object(func(key []byte) error {
		switch {
		case is(key, "content"):
			return s.str(&ev.Content)
		case is(key, "reasoning"):
			return s.str(&ev.reasoning)
		case is(key, "reasoning_content"):
			return s.str(&ev.reasoningContent)
		case is(key, "tool_calls"):
			// As encoding/json fills a slice: each item read into the one already there (what an earlier
			// tool_calls left within the slice's capacity), the rest cut.
			n := 0
			err := s.array(func(i int) error {
				n = i + 1
				if i < cap(ev.ToolCalls) {
					ev.ToolCalls = ev.ToolCalls[:i+1]
				} else {
					ev.ToolCalls = append(ev.ToolCalls, chat.ToolCallDelta{})
				}
				return s.toolCall(&ev.ToolCalls[i])
			})
			ev.ToolCalls = ev.ToolCalls[:n]
			if n == 0 {
				ev.ToolCalls = nil
			}
			return err
		}
		return s.skip(0)
	})
}

func (s *scanner) toolCall(tc *chat.ToolCallDelta) error {
	if s.null() {
		return nil
	}
	return s.object(func(key []byte) error {
		switch {
		case is(key, "index"):
			n := int64(tc.Index)
			err := s.int(&n)
			tc.Index = int(n)
			return err
		case is(key, "id"):
			return s.str(&tc.ID)
		case is(key, "function"):
			if s.null() {
				return nil
			}
			return s.object(func(key []byte) error {
				switch {
				case is(key, "name"):
					return s.str(&tc.Name)
				case is(key, "arguments"):
					return s.str(&tc.Arguments)
				}
				return s.skip(0)
			})
		}
		return s.skip(0)
	})
}

func (s *scanner) usage(u *chat.Usage) error {
	// count reads a details object's one count; the object is held by pointer: null clears it.
	count := func(name string, n *int64) error {
		if s.null() {
			*n = 0
			return nil
		}
		return s.object(func(key []byte) error {
			if !is(key, name) {
				return s.skip(0)
			}
			return s.int(n)
		})
	}
	return s.object(func(key []byte) error {
		switch {
		case is(key, "prompt_tokens"):
			return s.int(&u.PromptTokens)
		case is(key, "completion_tokens"):
			return s.int(&u.CompletionTokens)
		case is(key, "prompt_tokens_details"):
			return count("cached_tokens", &u.CachedTokens)
		case is(key, "completion_tokens_details"):
			return count("reasoning_tokens", &u.ReasoningTokens)
		}
		return s.skip(0)
	})
}

// scanner reads JSON from b at i, without allocating but for the strings it returns.
type scanner struct {
	b []byte
	i int
}

var (
	errSyntax = errors.New("malformed JSON")
	errType   = errors.New("a JSON value of the wrong type")
)

// maxDepth bounds the nesting of skipped values, as encoding/json's own limit does.
const maxDepth = 10000

// is reports whether an object's key is name (lower-case ASCII) as encoding/json matches them: without regard to
// case, Unicode's folding included. A key of name's length matches only by ASCII's case (a character that folds
// to an ASCII letter, as U+017F and U+212A do, is longer than it); a shorter one never does.
func is(key []byte, name string) bool {
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
func (s *scanner) ws() int {
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

func (s *scanner) peek() byte {
	if s.ws() < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// literal consumes word, reporting whether it was there.
func (s *scanner) literal(word string) bool {
	if s.ws(); bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		s.i += len(word)
		return true
	}
	return false
}

// null consumes a null, reporting whether the value was one.
func (s *scanner) null() bool { return s.peek() == 'n' && s.literal("null") }

// object calls member with each member's key (valid until the next read), the scanner at its value, which member
// consumes.
func (s *scanner) object(member func(key []byte) error) error {
	if s.peek() != '{' {
		return errType
	}
	s.i++
	if s.peek() == '}' {
		s.i++
		return nil
	}
	return s.members(member)
}

// members reads an object's members from a key on: object past its opening brace, less an empty object's end.
func (s *scanner) members(member func(key []byte) error) error {
	for {
		if s.peek() != '"' {
			return errSyntax
		}
		key, escaped, err := s.rawString()
		if err != nil {
			return err
		}
		if escaped {
			key = unescape(key)
		}
		if s.peek() != ':' {
			return errSyntax
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
			return errSyntax
		}
	}
}

// array calls elem for each element, the scanner at it; null is an empty array.
func (s *scanner) array(elem func(i int) error) error {
	if s.null() {
		return nil
	}
	if s.peek() != '[' {
		return errType
	}
	s.i++
	if s.peek() == ']' {
		s.i++
		return nil
	}
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
			return errSyntax
		}
	}
}

// rawString reads a string at its opening quote and returns what is between the quotes, and whether it holds
// escapes (checked to be JSON's).
func (s *scanner) rawString() (raw []byte, escaped bool, err error) {
	s.i++
	start := s.i
	for {
		if s.plain(); s.i == len(s.b) {
			return nil, false, errSyntax
		}
		switch s.b[s.i] {
		case '"':
			s.i++
			return s.b[start : s.i-1], escaped, nil
		case '\\':
			escaped = true
			if s.i+1 >= len(s.b) {
				return nil, false, errSyntax
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if s.i+6 > len(s.b) {
					return nil, false, errSyntax
				}
				if _, ok := hex4(s.b[s.i+2 : s.i+6]); !ok {
					return nil, false, errSyntax
				}
				s.i += 6
			default:
				return nil, false, errSyntax
			}
		default: // a control character
			return nil, false, errSyntax
		}
	}
}

// plain moves past the bytes of a string that need no look (all but a quote, a backslash and a control
// character), eight at a time while it can.
func (s *scanner) plain() {
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

// str reads a string into dst, leaving it for null.
func (s *scanner) str(dst *string) error {
	if s.null() {
		return nil
	}
	if s.peek() != '"' {
		if err := s.skip(0); err != nil {
			return err
		}
		return errType
	}
	raw, escaped, err := s.rawString()
	if err != nil || !escaped && utf8.Valid(raw) {
		if err == nil {
			*dst = string(raw)
		}
		return err
	}
	*dst = string(unescape(raw))
	return nil
}

// int reads an integer into dst, leaving it for null; a number with a fraction or an exponent, or past int64, is
// the wrong type.
func (s *scanner) int(dst *int64) error {
	if s.null() {
		return nil
	}
	start := s.ws()
	if err := s.skip(0); err != nil {
		return err
	}
	n, err := strconv.ParseInt(string(s.b[start:s.i]), 10, 64)
	if err != nil {
		return errType
	}
	*dst = n
	return nil
}

// skip consumes one value of any kind, checking that it is JSON.
func (s *scanner) skip(depth int) error {
	if depth > maxDepth {
		return errSyntax
	}
	switch c := s.peek(); {
	case c == '"':
		_, _, err := s.rawString()
		return err
	case c == '{':
		return s.object(func([]byte) error { return s.skip(depth + 1) })
	case c == '[':
		return s.array(func(int) error { return s.skip(depth + 1) })
	case c == 't' && s.literal("true"), c == 'f' && s.literal("false"), c == 'n' && s.literal("null"):
		return nil
	case c == '-' || '0' <= c && c <= '9':
		return s.number()
	}
	return errSyntax
}

// number consumes a number as JSON writes it: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() error {
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
		return errSyntax
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if !digits() {
			return errSyntax
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if !digits() {
			return errSyntax
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
