package responses

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/chat"
)

// aside keeps an item of a type chat has no place for as it came, with the text it carries (a custom tool call's
// input, a shell command's output, a search query), one string a line, for the guardrails: every string in it and
// the member names of the objects within it, but the values of the item's own members that name or mark it (type,
// id, call_id, status) and the provider's encrypted_content. An image_url is an image, counted as one: a data:image
// URL is only that, any other also text (its bytes are reserved for, and scanned); another base64 data URL (a
// file's) is not scanned, as its text is encoded. The item is read token by token, so that
// a million strings cost no tree of them; one that cannot be read (it was read whole before) is scanned whole. left
// is how many more JSON tokens (values, member names, brackets) the input's items aside may hold: false when this
// one holds more.
func aside(item json.RawMessage, left *int) (chat.Aside, bool) {
	a := chat.Aside{Raw: domain.Opaque(item)}
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
	d := json.NewDecoder(bytes.NewReader(item))
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
				return chat.Aside{Raw: a.Raw, Text: string(item)}, true
			}
			break
		}
		if *left--; *left < 0 {
			return a, false
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
			case n == 1 && own(in[0].name), encoded(t): // an encoded payload holds no text a filter could read
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

// maxAsideValues bounds the JSON tokens in an input's items aside, as chat.MaxTotalParts bounds the parts of its
// messages: reading each costs more than its bytes (a million cost 0.35 s and 99 MB of garbage). It is 50 an item
// of the most an input holds (chat.MaxMessages), where a Codex session's shell call takes about 30 and its output 8.
const maxAsideValues = 50 * chat.MaxMessages

// own reports the members of an item that name or mark it, or hold what only its provider reads.
func own(member string) bool {
	switch member {
	case "type", "id", "call_id", "status", "encrypted_content":
		return true
	}
	return false
}

// encoded reports a base64 data URL (a file's data), whose text, if any, only its decoding shows.
func encoded(s string) bool {
	head, _, ok := strings.Cut(s[:min(len(s), 256)], ";base64,")
	return ok && strings.HasPrefix(head, "data:")
}
