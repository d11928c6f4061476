package chat

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/jsonenc"
)

// readMessages reads the messages array in one pass over its bytes (jsonenc.Scanner), each message checked once
// it is read. The messages, the prompt, are most of a body and on the path to the first token: encoding/json went
// over them three times, a content twice more, with reflection and an allocation a field.
//
// It reads them as encoding/json decoded them into messageWire, and refuses what that refused with the same
// errors, in the same order (FuzzMessages holds it to that decoding): a list that is no array of JSON values,
// then one of no or too many messages, then the first message refused, those before it read.
func readMessages(raw []byte) ([]Message, error) {
	r := messageReader{s: jsonenc.NewScanner(raw), raw: raw}
	var msgs []Message
	var refused error
	n := 0
	err := r.s.Array(func(i int) error {
		n = i + 1
		if refused != nil || i >= MaxMessages {
			return r.s.Skip() // counted, and checked to be JSON
		}
		var m message
		_, why, err := r.value(func() error { return m.read(&r, i) })
		switch {
		case err != nil:
			return err
		case why != nil:
			refused = notMessage(i, why)
		default:
			if refused = m.check(i); refused == nil {
				msgs = append(msgs, m.Message)
			}
		}
		return nil
	})
	if err != nil || !r.s.End() {
		return nil, domain.Invalid("messages", "must be an array of messages")
	}
	if n == 0 || n > MaxMessages {
		return nil, domain.Invalid("messages", fmt.Sprintf("must hold 1 to %d messages", MaxMessages))
	}
	return msgs, refused
}

// messageReader is the scanner over the messages and the bytes it reads, which a part of a kind the gateway does
// not read is kept as (Part.Raw).
type messageReader struct {
	s   jsonenc.Scanner
	raw []byte
	// parts counts the content parts read into the messages so far, held to MaxTotalParts: those of a content
	// given twice in a message count each time, as each was read (and allocated).
	parts int
}

// value reads the next value with read and returns its bytes. When read fails, the value is skipped from its
// start instead: why is read's error (a value encoding/json would not decode into what read reads), err that the
// value is no JSON at all.
func (r *messageReader) value(read func() error) (v []byte, why, err error) {
	r.s.Peek() // past white space: the value starts at Pos
	start := r.s.Pos()
	if why = read(); why != nil {
		r.s.Seek(start)
		if err = r.s.Skip(); err != nil {
			return nil, why, err
		}
	}
	end := r.s.Pos()
	return r.raw[start:end:end], why, nil // an append to v reallocates rather than write over what follows
}

// message is a message as read, before check holds it to the rules.
type message struct {
	Message
	// contentErr is why the content is refused (neither a string nor an array of at most MaxParts parts, or a
	// part): reported once the fields checked before it pass.
	contentErr error
	// tooManyCalls says the tool calls held more than MaxToolCalls, of which ToolCalls holds the first.
	tooManyCalls bool
}

// read reads messages[i], an object, as encoding/json decoded it into messageWire: a key given twice reads into
// what the first one set, and null clears a field that messageWire holds by pointer and leaves one it does not.
func (m *message) read(r *messageReader, i int) error {
	m.Null = true // until a content other than null
	err := r.s.Object(func(key []byte) error {
		switch {
		case jsonenc.Is(key, "role"):
			return member(readString(&r.s, &m.Role, roles...), "role")
		case jsonenc.Is(key, "content"):
			return m.readContent(r, i)
		case jsonenc.Is(key, "name"):
			return member(readString(&r.s, &m.Name), "name")
		case jsonenc.Is(key, "tool_call_id"):
			return member(readString(&r.s, &m.ToolCallID), "tool_call_id")
		case jsonenc.Is(key, "tool_calls"):
			return member(readToolCalls(&r.s, &m.ToolCalls, &m.tooManyCalls), "tool_calls")
		}
		return r.s.Skip()
	})
	if len(m.ToolCalls) == 0 {
		m.ToolCalls = nil // as none were given: a message with [] is written as one without
	}
	return err
}

// check holds messages[i] to the rules, in the order they were checked before it was read by hand; the names of
// its fields are only made for an error, as most calls have none.
func (m *message) check(i int) error {
	if !slices.Contains(roles, m.Role) {
		return domain.Invalid(messageField(i, ".role"), "must be one of "+strings.Join(roles, ", "))
	}
	if m.Role == "tool" && m.ToolCallID == "" {
		return domain.Invalid(messageField(i, ".tool_call_id"), "is required in a tool message")
	}
	if m.tooManyCalls {
		return domain.Invalid(messageField(i, ".tool_calls"), fmt.Sprintf("must hold at most %d tool calls", MaxToolCalls))
	}
	for k, tc := range m.ToolCalls {
		if tc.ID == "" || tc.Name == "" {
			return domain.Invalid(messageField(i, fmt.Sprintf(".tool_calls[%d]", k)), "needs an id and a function name")
		}
	}
	if m.Null && (m.Role != "assistant" || len(m.ToolCalls) == 0) {
		return domain.Invalid(messageField(i, ".content"), "is required")
	}
	return m.contentErr
}

// readContent reads a message's content: null (or absent), a string (one text part), or an array of parts, each
// read once by the reader of its kind. Another value is refused, once the fields checked before it pass.
func (m *message) readContent(r *messageReader, i int) error {
	m.Content, m.Text, m.Null, m.contentErr = nil, false, false, nil // a content given twice: the last
	switch {
	case r.s.Null():
		m.Null = true
		return nil
	case r.s.Peek() == '"':
		var text string
		if err := r.s.Str(&text); err != nil {
			return err
		}
		m.Text, m.Content = true, []Part{{Type: "text", Text: text}}
		return nil
	case r.s.Peek() == '[':
		return m.readParts(r, i)
	}
	m.contentErr = badContent(i)
	return r.s.Skip()
}

// readParts reads a content's array of parts into m.Content; the first part refused, or the part past
// MaxTotalParts in all the messages, or more than MaxParts, is m.contentErr. The list grows as the parts come:
// counting them first for its room (Scanner.Count) was a second pass over their bytes, a third more time for a
// request with a 1 MB image.
func (m *message) readParts(r *messageReader, i int) error {
	n := 0
	err := r.s.Array(func(j int) error {
		n = j + 1
		if m.contentErr != nil || j >= MaxParts {
			return r.s.Skip()
		}
		if r.parts >= MaxTotalParts {
			m.contentErr = tooManyParts(i)
			return r.s.Skip()
		}
		var p partWire
		v, why, err := r.value(func() error { return p.read(&r.s) })
		switch {
		case err != nil:
			return err
		case why != nil || len(p.typ) == 0:
			m.contentErr = domain.Invalid(partField(i, j), "must be a content part object with a type")
		default:
			part, refused := p.part(v, i, j)
			if m.contentErr = refused; refused == nil {
				m.Content = append(m.Content, part)
				r.parts++
			}
		}
		return nil
	})
	if n > MaxParts {
		m.contentErr = badContent(i)
	}
	return err
}

// partWire is a content part as read: the texts of its members, made strings once its type says which it keeps.
type partWire struct {
	typ, text, url, detail []byte
}

// read reads a part as encoding/json decoded one into {type, text, image_url: {url, detail}}: null leaves a
// member as it was.
func (p *partWire) read(s *jsonenc.Scanner) error {
	return s.Object(func(key []byte) error {
		switch {
		case jsonenc.Is(key, "type"):
			return readText(s, &p.typ)
		case jsonenc.Is(key, "text"):
			return readText(s, &p.text)
		case jsonenc.Is(key, "image_url"):
			if s.Null() {
				return nil
			}
			return s.Object(func(key []byte) error {
				switch {
				case jsonenc.Is(key, "url"):
					return readText(s, &p.url)
				case jsonenc.Is(key, "detail"):
					return readText(s, &p.detail)
				}
				return s.Skip()
			})
		}
		return s.Skip()
	})
}

// part makes part j of messages[i], whose bytes are v: a text, an image (refused without its url), or another
// kind kept as it came.
func (p *partWire) part(v []byte, i, j int) (Part, error) {
	part := Part{Type: known(p.typ, "text", "image_url")}
	switch part.Type {
	case "text":
		part.Text = string(p.text)
	case "image_url":
		if len(p.url) == 0 {
			return part, domain.Invalid(partField(i, j)+".image_url.url", "is required")
		}
		part.ImageURL, part.Detail = string(p.url), string(p.detail)
	default:
		part.Raw = v
	}
	return part, nil
}

// readToolCalls reads a message's tool calls into calls as encoding/json decodes an array into a slice: null
// clears it, and an array's items read into the items the slice holds, up to its capacity (a list given twice).
// Past MaxToolCalls the items are read, to be refused as encoding/json refuses them, but not kept, and over
// says so.
func readToolCalls(s *jsonenc.Scanner, calls *[]ToolCall, over *bool) error {
	*over = false
	if s.Null() {
		*calls = nil
		return nil
	}
	tcs, n := *calls, 0
	err := s.Array(func(k int) error {
		if k >= MaxToolCalls {
			*over = true
			var ignored ToolCall
			return readToolCall(s, &ignored)
		}
		n = k + 1
		if k < cap(tcs) {
			tcs = tcs[:n]
		} else {
			tcs = append(tcs, ToolCall{})
		}
		return readToolCall(s, &tcs[k])
	})
	if n == 0 {
		tcs = tcs[:0:0] // [] leaves no items for a list given after it to read into
	}
	*calls = tcs[:n]
	return err
}

// readToolCall reads {id, type, function: {name, arguments}}: null, for it or a member, leaves it as it was, and
// type is checked to be a string but not kept.
func readToolCall(s *jsonenc.Scanner, tc *ToolCall) error {
	if s.Null() {
		return nil
	}
	return s.Object(func(key []byte) error {
		switch {
		case jsonenc.Is(key, "id"):
			return s.Str(&tc.ID)
		case jsonenc.Is(key, "type"):
			var typ []byte
			return readText(s, &typ)
		case jsonenc.Is(key, "function"):
			return ReadFunction(s, &tc.Name, &tc.Arguments)
		}
		return s.Skip()
	})
}

// ReadFunction reads a tool call's function, {name, arguments}, into name and arguments, as a request's messages
// and OpenAI's stream events both carry it: null, for it or a member, leaves them as they were, as encoding/json
// does.
func ReadFunction(s *jsonenc.Scanner, name, arguments *string) error {
	if s.Null() {
		return nil
	}
	return s.Object(func(key []byte) error {
		switch {
		case jsonenc.Is(key, "name"):
			return s.Str(name)
		case jsonenc.Is(key, "arguments"):
			return s.Str(arguments)
		}
		return s.Skip()
	})
}

// readString reads a string that encoding/json holds by pointer (null clears it), as the one of words it is when
// it is one: a message's role is the constant, not a copy made for each message.
func readString(s *jsonenc.Scanner, dst *string, words ...string) error {
	var text []byte
	if !s.Null() {
		var err error
		if text, _, err = s.Text(); err != nil {
			return err
		}
	}
	*dst = known(text, words...)
	return nil
}

// readText reads a string's text into dst, leaving it for null.
func readText(s *jsonenc.Scanner, dst *[]byte) error {
	if s.Null() {
		return nil
	}
	text, _, err := s.Text()
	if err == nil {
		*dst = text
	}
	return err
}

// known returns text as the one of words it is, else as a copy.
func known(text []byte, words ...string) string {
	for _, w := range words {
		if string(text) == w {
			return w
		}
	}
	return string(text)
}

func messageField(i int, field string) string { return "messages[" + strconv.Itoa(i) + "]" + field }

func partField(i, j int) string { return messageField(i, fmt.Sprintf(".content[%d]", j)) }

// tooManyParts refuses messages[i]'s content, whose parts take the messages past MaxTotalParts.
func tooManyParts(i int) error {
	return domain.Invalid(messageField(i, ".content"),
		fmt.Sprintf("takes the messages past %d content parts in all", MaxTotalParts)).With("max_parts", MaxTotalParts)
}

func badContent(i int) error {
	return domain.Invalid(messageField(i, ".content"),
		fmt.Sprintf("must be a string or an array of at most %d content parts", MaxParts))
}

// memberError is a message's member that is JSON of another type than the member's (a role that is a number, a
// tool_calls that is an object): the message is refused, naming it.
type memberError struct{ name string }

func (e *memberError) Error() string { return e.name + " " + memberTypes[e.name] }

// memberTypes says what each member a message is read for must be.
var memberTypes = map[string]string{
	"role":         "must be a string",
	"name":         "must be a string",
	"tool_call_id": "must be a string",
	"tool_calls":   "must be an array of tool calls, each an object {id, type, function: {name, arguments}} of strings",
}

// member names the member err was reading when it is JSON of the wrong type there.
func member(err error, name string) error {
	if errors.Is(err, jsonenc.ErrType) {
		return &memberError{name}
	}
	return err
}

// notMessage refuses messages[i], which is JSON but no message: one of its members of the wrong type (why says
// which), or not an object at all. The reason names the field as the rest of the API's 400s do; it used to be
// encoding/json's, which named the gateway's own Go types ("Go struct field messageWire.tool_calls of type
// []struct {...}").
func notMessage(i int, why error) error {
	var me *memberError
	if errors.As(why, &me) {
		return domain.Invalid(messageField(i, "."+me.name), memberTypes[me.name])
	}
	return domain.Invalid(messageField(i, ""), "must be a message object with a role and content")
}
