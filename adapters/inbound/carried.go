package inbound

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

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
// base64 data URL, base64 as a payload member holds it). An image_url member's value is an image: a data:image URL only
// that, any other also text. It is read token by token,
// so that a million strings cost no tree of them; a value that cannot be read (it was read whole before) is text
// whole. left is how many more tokens a request's values may hold (MaxCarried in all): false when raw holds more.
func ReadCarried(raw json.RawMessage, left *int, own func(member string) bool) (Carried, bool) {
	var a Carried
	var text strings.Builder
	add := func(s string) {
		if s == "" {
			return
		}
		if text.Len() > 0 {
			text.WriteByte('\n')
		}
		text.WriteString(s)
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber() // a number past float64's range is no error
	// The containers the reader is in, innermost last: an object's next string is a member's name when key is set,
	// and name is the member whose value is read.
	type container struct {
		object, key bool
		name        string
	}
	var in []container
	done := func() { // a value ended: an object's next string is a name
		if n := len(in); n > 0 && in[n-1].object {
			in[n-1].key = true
		}
	}
	for {
		tok, err := d.Token()
		if err != nil {
			if !errors.Is(err, io.EOF) || len(in) > 0 {
				return Carried{Text: string(raw)}, true
			}
			break
		}
		if *left--; *left < 0 {
			return Carried{}, false
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				in = append(in, container{object: t == '{', key: t == '{'})
			default:
				in = in[:len(in)-1]
				done()
			}
		case string:
			n := len(in)
			switch {
			case n > 0 && in[n-1].key:
				in[n-1].key, in[n-1].name = false, t
				if n > 1 {
					add(t)
				}
				continue
			case n > 0 && in[n-1].object && in[n-1].name == "image_url" && strings.HasPrefix(t, "data:image/"):
				a.Images++ // its bytes are an image's, not text
				a.ImageBytes += len(t)
			case n > 0 && in[n-1].object && in[n-1].name == "image_url":
				a.Images++ // an image to fetch, and a text that goes upstream as it is
				add(t)
			case n == 1 && own(in[0].name), encoded(t), n > 0 && payload(in[n-1].name) && base64Data(t):
				// Its own, or an encoded payload (a file's, an image's): what text it holds only its decoding shows.
			default:
				add(t)
			}
			done()
		default:
			done()
		}
	}
	a.Text = text.String()
	return a, true
}

// encoded reports a base64 data URL (a file's data).
func encoded(s string) bool {
	head, _, ok := strings.Cut(s[:min(len(s), 256)], ";base64,")
	return ok && strings.HasPrefix(head, "data:")
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
func base64Data(s string) bool {
	if len(s) < 256 || len(s)%4 != 0 {
		return false
	}
	body := strings.TrimRight(s, "=")
	if len(s)-len(body) > 2 {
		return false
	}
	for i := 0; i < len(body); i++ {
		if c := body[i]; !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '/') {
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
