// Package h1 reads the head of an HTTP/1.x message, a request's or a response's, as net/http reads one with
// net/textproto, in one pass over the bytes and into one string: where the head ends (Len), gathering one that is
// not all in a read buffer yet (Gather), the copy into a string with the field names in canonical form (String), and
// its header fields (Fields). The start line is the caller's: the server and the client each parse their own.
package h1

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// Len is the length of the head at the start of b through its blank line, the first line after the start line that
// is empty (LF or CRLF, as bufio.Reader.ReadLine ends lines), or -1 when b does not hold all of it.
func Len(b []byte) int {
	end := bytes.IndexByte(b, '\n') // the start line's
	for end >= 0 {
		start := end + 1
		switch {
		case len(b) > start && b[start] == '\n':
			return start + 1
		case len(b) > start+1 && b[start] == '\r' && b[start+1] == '\n':
			return start + 2
		}
		if end = bytes.IndexByte(b[start:], '\n'); end >= 0 {
			end += start
		}
	}
	return -1
}

// Gather appends to dst a head that is not all buffered, read a line at a time through its blank line (a line read
// is the buffer's only until the next read); on a failure it returns what came before it.
func Gather(dst []byte, br *bufio.Reader) ([]byte, error) {
	head, start := dst, len(dst)
	for line := start; ; {
		frag, err := br.ReadSlice('\n')
		head = append(head, frag...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return head, err
		}
		if n := len(head) - line; line > start && (n == 1 || n == 2 && head[line] == '\r') {
			return head, nil
		}
		line = len(head)
	}
}

// maxHint bounds the fields Fields sizes a head's map and values for.
const maxHint = 1000

// Shared bounds the head whose names and values share the string it is copied into (String): a part kept past its
// message (a request id or an upstream's id in a generation record waiting in the spool, a trace's state in the
// exporter's queue) keeps the whole of that string, and a head may be a megabyte. A larger head's names and values
// are copies of their own, as net/http makes them.
const Shared = 8 << 10

// ErrCut is Fields' answer to a head that ends before its blank line.
var ErrCut = errors.New("the head ends before its blank line")

// String copies a head into a string, each field's name in canonical form (textproto.CanonicalMIMEHeaderKey's: upper
// case first and after each hyphen, lower case elsewhere) unless it holds a space or a byte that is not a token's,
// counts the fields, and says whether every name is a token (textproto takes a name with a space in it, which
// net/http's server then refuses). A field's name is what comes before the first colon of a line, but the start line
// and those that continue a field (which begin with a space or a tab); canonical form keeps its length. The bytes
// between names that change are copied in one piece.
func String(raw []byte) (s string, fields int, tokens bool) {
	var b strings.Builder
	b.Grow(len(raw))
	copied, tokens := 0, true
	for at, first := 0, true; at < len(raw); first = false {
		line := raw[at:]
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line = line[:i+1]
		}
		if !first && line[0] != ' ' && line[0] != '\t' {
			if name, _, ok := bytes.Cut(line, []byte(":")); ok {
				fields++
				changed, token := canonical(name)
				tokens = tokens && token
				if changed {
					b.Write(raw[copied:at])
					writeCanonical(&b, name)
					copied = at + len(name)
				}
			}
		}
		at += len(line)
	}
	b.Write(raw[copied:])
	return b.String(), fields, tokens
}

// Fields parses the header fields at the start of s, a head's copy (String) after its start line, through the blank
// line that ends them, as textproto.Reader.ReadMIMEHeader reads them, and returns the same Header; fields is String's
// count, which sizes it. Lines end with LF or CRLF; the last one of a head that was cut (ErrCut) may have no end, and
// is a line all the same. The first field must not begin with a space; a line that begins with a space or a tab
// continues the field before it (obs-fold), joined to it with one space, each line trimmed of spaces and tabs at
// both ends. A field's first line must hold a colon; its name, before the colon, is a token (a space in it is
// allowed, as textproto does: such a name is left as it is), in canonical form; its value may hold no control byte
// but a tab, and loses the spaces and tabs it begins with. Names and values are parts of s (a field folded over
// lines is the only one that takes a string of its own), but for an s larger than Shared. Errors quote at most 64
// bytes of the line.
func Fields(s string, fields int) (http.Header, error) {
	own := len(s) > Shared
	// One array for the values of fields given once, most of them; the map and the array are sized for at most
	// maxHint fields, as textproto does, so that a head of many short fields, or one given many times, does not
	// make them large at once.
	fields = min(fields, maxHint)
	h := make(http.Header, fields)
	values := make([]string, fields)
	for first := true; ; first = false {
		line, rest, ok := NextLine(s)
		if !ok {
			return nil, ErrCut
		}
		if line == "" {
			return h, nil
		}
		s = rest
		if first && (line[0] == ' ' || line[0] == '\t') {
			return nil, textproto.ProtocolError(fmt.Sprintf("malformed MIME header initial line: %q", Truncate(line)))
		}
		if strings.IndexByte(line, ':') < 0 {
			return nil, textproto.ProtocolError(fmt.Sprintf("malformed MIME header: missing colon: %q", Truncate(line)))
		}
		kv := trimSpaceTab(line)
		if continued(s) {
			kv, s = unfold(kv, s)
		}
		key, v, _ := strings.Cut(kv, ":")
		if !validName(key) || !httpguts.ValidHeaderFieldValue(v) {
			return nil, textproto.ProtocolError(fmt.Sprintf("malformed MIME header line: %q", Truncate(kv)))
		}
		value := trimLeft(v)
		if own {
			key, value = strings.Clone(key), strings.Clone(value)
		}
		if vv, ok := h[key]; ok || len(values) == 0 {
			h[key] = append(vv, value)
		} else {
			values[0] = value
			h[key], values = values[:1:1], values[1:]
		}
	}
}

// continued says whether the next line continues a field: it begins with a space or a tab.
func continued(s string) bool { return len(s) > 0 && (s[0] == ' ' || s[0] == '\t') }

// unfold joins to a field's first line, kv, the lines of s that continue it, each with one space and trimmed, and
// returns the rest of s. It appends to a buffer of its own: a field folded over many lines costs their length, not
// its square.
func unfold(kv, s string) (string, string) {
	b := []byte(kv)
	for continued(s) {
		var line string
		line, s, _ = NextLine(s)
		b = append(append(b, ' '), trimSpaceTab(line)...)
	}
	return string(b), s
}

// canonical says whether canonical form changes a field's name (a token, not in that form), and whether the name is
// a token.
func canonical(name []byte) (changes, token bool) {
	upper := true
	for _, c := range name {
		if !httpguts.IsTokenRune(rune(c)) {
			return false, false
		}
		changes = changes || upper && 'a' <= c && c <= 'z' || !upper && 'A' <= c && c <= 'Z'
		upper = c == '-'
	}
	return changes, len(name) > 0
}

// writeCanonical writes a name in canonical form, through a buffer on the stack.
func writeCanonical(b *strings.Builder, name []byte) {
	var buf [64]byte
	upper := true
	for len(name) > 0 {
		n := copy(buf[:], name)
		name = name[n:]
		for i, c := range buf[:n] {
			if upper && 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			} else if !upper && 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			buf[i], upper = c, c == '-'
		}
		b.Write(buf[:n])
	}
}

// validName is a field's name as textproto takes one: a token, or tokens and spaces.
func validName(name string) bool {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c != ' ' && !httpguts.IsTokenRune(rune(c)) {
			return false
		}
	}
	return name != ""
}

// NextLine cuts the first line off s, without its LF or CRLF; a last line without an end is a line as it is. ok is
// false when s is empty.
func NextLine(s string) (line, rest string, ok bool) {
	if s == "" {
		return "", "", false
	}
	line, rest, found := strings.Cut(s, "\n")
	if found {
		line = strings.TrimSuffix(line, "\r")
	}
	return line, rest, true
}

// trimSpaceTab trims spaces and tabs, and nothing else, from both ends of s.
func trimSpaceTab(s string) string {
	s = trimLeft(s)
	end := len(s)
	for end > 0 && (s[end-1] == ' ' || s[end-1] == '\t') {
		end--
	}
	return s[:end]
}

// trimLeft trims spaces and tabs from the start of s (strings.TrimLeft makes a set of its cutset on every call).
func trimLeft(s string) string {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return s[i:]
}

// EqualFoldASCII says whether s and t are equal with ASCII letters in either case, as net/http compares a
// Transfer-Encoding with "chunked" and looks for a token: strings.EqualFold folds Unicode too, and takes the Kelvin
// sign (U+212A) for a "k", so "chun\u212Aed" would frame a body as chunked where net/http, and a proxy in front that
// compares bytes, refuse it or frame it by its Content-Length.
func EqualFoldASCII(s, t string) bool {
	if len(s) != len(t) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if lowerASCII(s[i]) != lowerASCII(t[i]) {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// Truncate cuts s to 64 bytes, for an error that quotes what it refused.
func Truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
