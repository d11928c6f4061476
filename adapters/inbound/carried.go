package inbound

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/switchboard-ai/switchboard/adapters/internal/jsonenc"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/chat"
)

// Carried is the text a value passed on as it came carries (a Responses item chat has no place for, a Messages
// document block, a content part of a kind the gateway does not read), one string a line, for the guardrails, and
// the images in it.
type Carried struct {
	Text string
	// Images are the image_url members' values; ImageBytes the bytes of those that are data:image URLs, which are
	// images only (any other is also text).
	Images, ImageBytes int
}

// MaxCarried bounds the JSON tokens (values, member names, brackets) of the values a request passes on as they
// came that ReadCarried reads, as chat.MaxTotalParts bounds its messages' parts: reading each costs more than its
// bytes (a million cost 0.35 s and 99 MB of garbage). It is 50 an item of the most a Responses input holds
// (chat.MaxMessages), where a Codex session's shell call takes about 30 and its output 8.
const MaxCarried = 50 * chat.MaxMessages

// ReadCarried reads the text raw, a JSON value, carries: every string in it and the member names of the objects
// within it, but the values of raw's own members that own names (its type, its ids...) and encoded payloads (a
// base64 data URL, base64 as a payload member holds it). An image_url member's value is an image: a data:image URL
// only that, any other also text. It is read in place (jsonenc.Scanner: encoding/json's Decoder.Token allocated
// for every token, half of what a Codex body's decoding allocated), so that a million strings cost no tree of
// them; a value that cannot be read (it was read whole before) is text whole. left is how many more tokens
// (values, member names, brackets) a request's values may hold (MaxCarried in all): false when raw holds more.
func ReadCarried(raw json.RawMessage, left *int, own func(member string) bool) (Carried, bool) {
	r := carrier{left: left, own: own}
	s := jsonenc.NewScanner(raw)
	switch err := r.value(&s, nil, false, true); {
	case errors.Is(err, errTooMuch):
		return Carried{}, false
	case err != nil:
		return Carried{Text: string(raw)}, true
	}
	r.c.Text = r.text.String()
	return r.c, true
}

// carrier is ReadCarried's reading.
type carrier struct {
	c    Carried
	text strings.Builder
	left *int
	own  func(member string) bool
}

var errTooMuch = errors.New("too many tokens")

// spend counts a token against the request's bound.
func (r *carrier) spend() error {
	if *r.left--; *r.left < 0 {
		return errTooMuch
	}
	return nil
}

// value reads the value at s, raw itself when root: member is the name it is the value of (nil in an array or at
// the root), top whether that member is one of raw's own.
func (r *carrier) value(s *jsonenc.Scanner, member []byte, top, root bool) error {
	if err := r.spend(); err != nil { // the value, or its opening bracket
		return err
	}
	if s.Null() {
		return nil
	}
	err := s.Object(func(key []byte) error {
		if err := r.spend(); err != nil {
			return err
		}
		if !root { // raw's own member names are its format's
			r.add(key)
		}
		return r.value(s, key, root, false)
	})
	if err != jsonenc.ErrType {
		return r.closed(err)
	}
	if err = s.Array(func(int) error { return r.value(s, nil, false, false) }); err != jsonenc.ErrType {
		return r.closed(err)
	}
	text, _, err := s.Text()
	switch {
	case err == jsonenc.ErrType: // a number or a boolean
		return nil
	case err != nil:
		return err
	case string(member) == "image_url" && bytes.HasPrefix(text, []byte("data:image/")):
		r.c.Images++ // its bytes are an image's, not text
		r.c.ImageBytes += len(text)
	case string(member) == "image_url":
		r.c.Images++ // an image to fetch, and a text that goes upstream as it is
		r.add(text)
	case top && r.own(string(member)), encoded(text), payload(string(member)) && base64Data(text):
		// Its own, or an encoded payload (a file's, an image's): what text it holds only its decoding shows.
	default:
		r.add(text)
	}
	return nil
}

// closed counts a container's closing bracket once it is read.
func (r *carrier) closed(err error) error {
	if err != nil {
		return err
	}
	return r.spend()
}

// add writes a text to the text carried, a line each.
func (r *carrier) add(text []byte) {
	if len(text) == 0 {
		return
	}
	if r.text.Len() > 0 {
		r.text.WriteByte('\n')
	}
	r.text.Write(text)
}

// encoded reports a base64 data URL (a file's data).
func encoded(s []byte) bool {
	head, _, ok := bytes.Cut(s[:min(len(s), 256)], []byte(";base64,"))
	return ok && bytes.HasPrefix(head, []byte("data:"))
}

// payload reports the members that hold a payload encoded as base64 (Anthropic's base64 source's data, OpenAI's
// input_audio data and file_data, an encrypted_content, an image generation's result).
func payload(member string) bool {
	switch member {
	case "data", "file_data", "encrypted_content", "result":
		return true
	}
	return false
}

// base64Data reports a value that is base64 as such a member holds it: 256 bytes or more of base64's alphabet, a
// multiple of 4 of them, padded with = at the end only. Anything else, text included, is scanned.
func base64Data(s []byte) bool {
	if len(s) < 256 || len(s)%4 != 0 {
		return false
	}
	body := bytes.TrimRight(s, "=")
	if len(s)-len(body) > 2 {
		return false
	}
	for _, c := range body {
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '/') {
			return false
		}
	}
	return true
}

// TooMuchCarried is the refusal of the value at field, past MaxCarried with the values before it.
func TooMuchCarried(field string) error {
	return domain.Invalid(field, fmt.Sprintf("the request's values of kinds the gateway does not read (items, parts and "+
		"blocks passed on as they came) hold more than %d JSON tokens (values, member names, brackets) in all", MaxCarried))
}

// TypeOnly is ReadCarried's own for a content part: its type member names its kind, and nothing else is its own.
func TypeOnly(member string) bool { return member == "type" }
