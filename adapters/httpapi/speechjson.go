package httpapi

import (
	"bytes"
	"io"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
)

// bindSpeech is bindJSON for a speech request, which every speech call decodes: the body is read whole, and a
// request of the usual shape is decoded by parseSpeech without reflection; any other goes to encoding/json, so
// that what is accepted, what each field holds and every error (a 400 naming the field or the byte) stay
// encoding/json's.
func bindSpeech(c *gin.Context, dst *speechReq) error {
	bufp := bodyPool.Get().(*[]byte)
	body, err := readBody(c.Request.Body, (*bufp)[:0])
	defer func() {
		if cap(body) <= maxPooledBody { // a rare large body is not kept for every later request
			*bufp = body[:0]
		}
		bodyPool.Put(bufp)
	}()
	if err != nil {
		return jsonError(err)
	}
	if parseSpeech(body, dst) {
		return nil
	}
	*dst = speechReq{}
	return decodeJSON(bytes.NewReader(body), dst)
}

// maxPooledBody bounds the bodies bodyPool keeps buffers for; a speech request is usually a few hundred bytes.
const maxPooledBody = 64 << 10

var bodyPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// readBody appends the whole of r to buf. A read error (the body limit, a caller gone) comes back as it is.
func readBody(r io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
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

// speechFields are the keys of a speech request. encoding/json matches keys without regard to case, Unicode
// folding included (ſ matches s): parseSpeech takes only keys of plain ASCII, only exact matches of these, and
// leaves a key that matches one of them otherwise to encoding/json.
var speechFields = []string{"model", "input", "voice", "response_format", "speed", "provider", "user", "session_id"}

// parseSpeech decodes body into r when body is a JSON object whose keys are plain ASCII, known ones written
// exactly, whose string fields are strings or null, whose speed is a number or null, whose voice is a name and
// whose provider is null; other keys may hold any JSON value and are skipped. It reports false for anything
// else — bad JSON, a value of another type, a voice object, provider options — which encoding/json then
// decodes: r holds partial results by then. What it accepts it decodes exactly as encoding/json does: the
// differential test and fuzz target hold it to that.
func parseSpeech(body []byte, r *speechReq) bool {
	p := jsonScanner{b: body}
	if len(body) <= maxSharedBody {
		p.s = string(body)
	}
	if !p.skipSpace() || p.b[p.i] != '{' {
		return false
	}
	return p.list('}', func(key []byte, plain bool) bool {
		return plain && p.field(p.text(key, plain), r)
	}) && p.atEnd()
}

// field decodes the value of key into r, or skips it when key is none of r's.
func (p *jsonScanner) field(key string, r *speechReq) bool {
	switch key {
	case "model":
		return p.optString(&r.Model)
	case "input":
		return p.optString(&r.Input)
	case "voice":
		var name *string
		ok := p.optString(&name)
		r.Voice = (*voice)(name)
		return ok
	case "response_format":
		return p.optString(&r.ResponseFormat)
	case "user":
		return p.optString(&r.User)
	case "session_id":
		return p.optString(&r.SessionID)
	case "speed":
		return p.optNumber(&r.Speed)
	case "provider":
		r.Provider = nil
		return p.null()
	}
	for _, f := range speechFields {
		if strings.EqualFold(key, f) {
			return false
		}
	}
	return p.skipValue(0)
}

// jsonScanner reads JSON from b at i. s is b as a string when b is small: the strings it decodes are then
// slices of s, which costs one allocation for all of them. slots are where decoded strings go, also allocated
// together.
type jsonScanner struct {
	b     []byte
	s     string
	i     int
	slots []string
}

// maxSharedBody bounds the bodies whose decoded strings share one allocation, which each of them keeps alive.
const maxSharedBody = 4 << 10

// maxSkipDepth bounds the nesting of a skipped value; deeper goes to encoding/json.
const maxSkipDepth = 64

// skipSpace moves past white space and reports whether a byte follows.
func (p *jsonScanner) skipSpace() bool {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return true
		}
	}
	return false
}

// atEnd reports whether only white space is left.
func (p *jsonScanner) atEnd() bool { return !p.skipSpace() }

func (p *jsonScanner) colon() bool {
	if !p.skipSpace() || p.b[p.i] != ':' {
		return false
	}
	p.i++
	return p.skipSpace()
}

// null reads the literal null.
func (p *jsonScanner) null() bool { return p.literal("null") }

func (p *jsonScanner) literal(lit string) bool {
	if len(p.b)-p.i < len(lit) || string(p.b[p.i:p.i+len(lit)]) != lit {
		return false
	}
	p.i += len(lit)
	return true
}

// optString reads a string into *dst, or null, which clears it.
func (p *jsonScanner) optString(dst **string) bool {
	if p.b[p.i] == 'n' {
		*dst = nil
		return p.null()
	}
	raw, plain, ok := p.rawString()
	if !ok {
		return false
	}
	if len(p.slots) == 0 {
		p.slots = make([]string, len(speechFields))
	}
	*dst, p.slots = &p.slots[0], p.slots[1:]
	**dst = p.text(raw, plain)
	return true
}

// optNumber reads a number into *dst, or null, which clears it. A number out of float64's range is left to
// encoding/json, which refuses it.
func (p *jsonScanner) optNumber(dst **float64) bool {
	if p.b[p.i] == 'n' {
		*dst = nil
		return p.null()
	}
	start := p.i
	if !p.number() {
		return false
	}
	f, err := strconv.ParseFloat(string(p.b[start:p.i]), 64)
	if err != nil {
		return false
	}
	*dst = &f
	return true
}

// rawString reads a string at i and returns what is between its quotes, and whether that is plain: ASCII
// without escapes, its own text. It checks the string's syntax: escapes, and no control characters. Invalid
// UTF-8 is no syntax error.
func (p *jsonScanner) rawString() (raw []byte, plain, ok bool) {
	if p.b[p.i] != '"' {
		return nil, false, false
	}
	start := p.i + 1
	plain = true
	for i := start; i < len(p.b); i++ {
		switch c := p.b[i]; {
		case c == '"':
			p.i = i + 1
			return p.b[start:i], plain, true
		case c >= utf8.RuneSelf:
			plain = false
		case c == '\\':
			plain = false
			switch {
			case i+1 >= len(p.b):
				return nil, false, false
			case escapes[p.b[i+1]] != 0:
				i++
			case getu4(p.b[i:]) >= 0:
				i += 5
			default:
				return nil, false, false
			}
		case c < ' ':
			return nil, false, false
		}
	}
	return nil, false, false
}

// text is a string that rawString read: a slice of s when there is one and the string is plain.
func (p *jsonScanner) text(raw []byte, plain bool) string {
	if !plain {
		return unquote(raw)
	}
	if p.s == "" {
		return string(raw)
	}
	start := cap(p.b) - cap(raw) // raw is a slice of b
	return p.s[start : start+len(raw)]
}

// unquote is the text of a string whose syntax rawString checked, as encoding/json decodes it: escapes
// resolved, an unpaired surrogate and each byte of invalid UTF-8 replaced by U+FFFD.
func unquote(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw)
	}
	out := make([]byte, 0, len(raw)+2*utf8.UTFMax)
	for r := 0; r < len(raw); {
		switch c := raw[r]; {
		case c == '\\':
			if e := escapes[raw[r+1]]; e != 0 {
				out = append(out, e)
				r += 2
				continue
			}
			rr := getu4(raw[r:]) // \uXXXX, which rawString checked
			r += 6
			if utf16.IsSurrogate(rr) {
				if dec := utf16.DecodeRune(rr, getu4(raw[r:])); dec != unicode.ReplacementChar {
					out = utf8.AppendRune(out, dec)
					r += 6
					continue
				}
				rr = unicode.ReplacementChar
			}
			out = utf8.AppendRune(out, rr)
		case c < utf8.RuneSelf:
			out = append(out, c)
			r++
		default:
			rr, size := utf8.DecodeRune(raw[r:])
			if rr == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, unicode.ReplacementChar)
			} else {
				out = append(out, raw[r:r+size]...)
			}
			r += size
		}
	}
	return string(out)
}

// escapes are the one-character escapes of JSON strings and what each stands for (0 for none).
var escapes = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// getu4 decodes \uXXXX at the start of s, or returns -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// number reads a number as JSON writes one: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *jsonScanner) number() bool {
	if p.i < len(p.b) && p.b[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(p.b) && p.b[p.i] == '0':
		p.i++
	case p.digits() == 0:
		return false
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if p.digits() == 0 {
			return false
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if p.digits() == 0 {
			return false
		}
	}
	return true
}

func (p *jsonScanner) digits() int {
	start := p.i
	for p.i < len(p.b) && '0' <= p.b[p.i] && p.b[p.i] <= '9' {
		p.i++
	}
	return p.i - start
}

// skipValue reads any JSON value at i, checking its syntax, and keeps nothing of it.
func (p *jsonScanner) skipValue(depth int) bool {
	if depth > maxSkipDepth {
		return false
	}
	switch p.b[p.i] {
	case '"':
		_, _, ok := p.rawString()
		return ok
	case 'n':
		return p.null()
	case 't':
		return p.literal("true")
	case 'f':
		return p.literal("false")
	case '[':
		return p.list(']', func([]byte, bool) bool { return p.skipValue(depth + 1) })
	case '{':
		return p.list('}', func([]byte, bool) bool { return p.skipValue(depth + 1) })
	}
	return p.number()
}

// list reads an array (end is ']') or an object (end is '}') at i, each value with entry, which also gets an
// object entry's key as rawString returned it.
func (p *jsonScanner) list(end byte, entry func(key []byte, plain bool) bool) bool {
	p.i++
	if !p.skipSpace() {
		return false
	}
	if p.b[p.i] == end {
		p.i++
		return true
	}
	for {
		var key []byte
		var plain bool
		if end == '}' {
			var ok bool
			if key, plain, ok = p.rawString(); !ok || !p.colon() {
				return false
			}
		}
		if !entry(key, plain) || !p.skipSpace() {
			return false
		}
		switch p.b[p.i] {
		case ',':
			p.i++
			if !p.skipSpace() {
				return false
			}
		case end:
			p.i++
			return true
		default:
			return false
		}
	}
}
