package upstream

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

// readHead reads a response's head, its status line and header fields through the blank line that ends them, and
// parses it into resp (parseHead). A head all in the read buffer, as one comes with the first read of an answer, is parsed
// where it is; one that is not is gathered a line at a time as it comes (gatherHead). A head the connection's
// failure cut is parsed as far as it came: a malformed line before the cut is the error, as net/textproto, which
// reads a line at a time, reports it; otherwise the failure is.
func (c *conn) readHead(resp *http.Response) error {
	buf, _ := c.br.Peek(c.br.Buffered())
	if n := headLen(buf); n >= 0 {
		err := parseHead(buf[:n], resp)
		c.br.Discard(n)
		return err
	}
	raw, rerr := gatherHead(c.br)
	if err := parseHead(raw, resp); err != errHeadCut {
		return err
	}
	return rerr
}

// headLen is the length of the head at the start of b through its blank line, the first line after the status
// line that is empty (LF or CRLF, as bufio.Reader.ReadLine ends lines), or -1 when b does not hold all of it.
func headLen(b []byte) int {
	end := bytes.IndexByte(b, '\n') // the status line's
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

// gatherHead reads a head that is not all buffered, a line at a time through its blank line, into a slice of its
// own (a line read is the buffer's only until the next read); on a failure it returns what came before it.
func gatherHead(br *bufio.Reader) ([]byte, error) {
	var head []byte
	for line := 0; ; {
		frag, err := br.ReadSlice('\n')
		head = append(head, frag...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return head, err
		}
		if n := len(head) - line; line > 0 && (n == 1 || n == 2 && head[line] == '\r') {
			return head, nil
		}
		line = len(head)
	}
}

// maxHint bounds the fields parseHead sizes a head's map and values for.
const maxHint = 1000

// errHeadCut is parseHead's answer to a head that ends before its blank line.
var errHeadCut = errors.New("the response head ends before its blank line")

// parseHead parses a head into resp as net/http's client reads one: the status line (statusLine), then the header fields as
// textproto.Reader.ReadMIMEHeader reads them, and returns the same Header. Lines end with LF or CRLF; the last one
// of a head that was cut (errHeadCut) may have no end, and is a line all the same. The first field must not
// begin with a space; a line that begins with a space or a tab continues the field before it (obs-fold), joined
// to it with one space, each line trimmed of spaces and tabs at both ends. A field's first line must hold a
// colon; its name, before the colon, is a token (a space in it is allowed, as textproto does: such a name is left
// as it is), in canonical form; its value may hold no control byte but a tab, and loses the spaces and tabs it
// begins with. The head is copied once, into one string (headString), which the status, the names and the values
// share: a field folded over lines is the only one that takes a string of its own. Its errors quote at most 64
// bytes of the line.
func parseHead(raw []byte, resp *http.Response) error {
	s, fields := headString(raw)
	line, s, ok := nextLine(s)
	if !ok {
		return errHeadCut
	}
	if err := statusLine(line, resp); err != nil {
		return err
	}
	// One array for the values of fields given once, most of them; the map and the array are sized for at most
	// maxHint fields, as textproto does, so that a head of many short fields, or one given many times, does not
	// make them large at once.
	fields = min(fields, maxHint)
	h := make(http.Header, fields)
	values := make([]string, fields)
	for first := true; ; first = false {
		if line, s, ok = nextLine(s); !ok {
			return errHeadCut
		}
		if line == "" {
			resp.Header = h
			return nil
		}
		if first && (line[0] == ' ' || line[0] == '\t') {
			return textproto.ProtocolError(fmt.Sprintf("malformed MIME header initial line: %q", truncate(line)))
		}
		if strings.IndexByte(line, ':') < 0 {
			return textproto.ProtocolError(fmt.Sprintf("malformed MIME header: missing colon: %q", truncate(line)))
		}
		kv := trimSpaceTab(line)
		if continued(s) {
			kv, s = unfold(kv, s)
		}
		key, v, _ := strings.Cut(kv, ":")
		if !validName(key) || !httpguts.ValidHeaderFieldValue(v) {
			return textproto.ProtocolError(fmt.Sprintf("malformed MIME header line: %q", truncate(kv)))
		}
		value := strings.TrimLeft(v, " \t")
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
		line, s, _ = nextLine(s)
		b = append(append(b, ' '), trimSpaceTab(line)...)
	}
	return string(b), s
}

// headString copies a head into a string, each field's name in canonical form (textproto.CanonicalMIMEHeaderKey's:
// upper case first and after each hyphen, lower case elsewhere) unless it holds a space or a byte that is not a
// token's, and counts the fields. A field's name is what comes before the first colon of a line, but the status
// line and those that continue a field (which begin with a space or a tab); canonical form keeps its length. The
// bytes between names that change are copied in one piece.
func headString(raw []byte) (string, int) {
	var b strings.Builder
	b.Grow(len(raw))
	fields, copied := 0, 0
	for at, first := 0, true; at < len(raw); first = false {
		line := raw[at:]
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line = line[:i+1]
		}
		if !first && line[0] != ' ' && line[0] != '\t' {
			if name, _, ok := bytes.Cut(line, []byte(":")); ok {
				fields++
				if changes(name) {
					b.Write(raw[copied:at])
					writeCanonical(&b, name)
					copied = at + len(name)
				}
			}
		}
		at += len(line)
	}
	b.Write(raw[copied:])
	return b.String(), fields
}

// changes says whether canonical form changes a field's name: a token, without a space, not in that form.
func changes(name []byte) bool {
	changed, upper := false, true
	for _, c := range name {
		if !httpguts.IsTokenRune(rune(c)) {
			return false
		}
		changed = changed || upper && 'a' <= c && c <= 'z' || !upper && 'A' <= c && c <= 'Z'
		upper = c == '-'
	}
	return changed
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

// nextLine cuts the first line off s, without its LF or CRLF; a last line without an end is a line as it is. ok is
// false when s is empty.
func nextLine(s string) (line, rest string, ok bool) {
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
	return strings.TrimRight(strings.TrimLeft(s, " \t"), " \t")
}
