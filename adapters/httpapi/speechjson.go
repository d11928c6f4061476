package httpapi

import (
	"sync"

	"github.com/gin-gonic/gin"

	"github.com/switchboard-ai/switchboard/adapters/internal/jsonenc"
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
		return jsonError(err, body, dst)
	}
	if parseSpeech(body, dst) {
		return nil
	}
	*dst = speechReq{}
	return decodeBounded(body, nil, dst)
}

// maxPooledBody bounds the bodies bodyPool keeps buffers for; a speech request is usually a few hundred bytes.
const maxPooledBody = 64 << 10

var bodyPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// parseSpeech decodes body into r when body is a JSON object whose string fields are strings or null, whose
// speed is a number or null, whose voice is a name and whose provider is null; other keys may hold any JSON value
// and are skipped, and keys match as encoding/json matches them (jsonenc.Is). It reports false for anything else
// — bad JSON, a value of another type, a voice object, provider options — which encoding/json then decodes: r
// holds partial results by then. What it accepts it decodes exactly as encoding/json does: the differential test
// and fuzz target hold it to that.
func parseSpeech(body []byte, r *speechReq) bool {
	p := speechParser{s: jsonenc.NewScanner(body), body: body}
	if len(body) <= maxSharedBody {
		p.shared = string(body)
	}
	return p.s.Object(func(key []byte) error { return p.member(key, r) }) == nil && p.s.End()
}

// speechParser reads a speech request with s. shared is body as a string when body is small: the strings that
// are body's own bytes are then slices of it, which costs one allocation for all of them. slots are where the
// strings go, also allocated together.
type speechParser struct {
	s      jsonenc.Scanner
	body   []byte
	shared string
	slots  []string
}

// maxSharedBody bounds the bodies whose decoded strings share one allocation, which each of them keeps alive.
const maxSharedBody = 4 << 10

// speechStrings is how many string fields a speech request has: the slots allocated at once.
const speechStrings = 6

// member decodes the value of key into r, or skips it when key is none of r's.
func (p *speechParser) member(key []byte, r *speechReq) error {
	switch string(key) {
	case "model":
		return p.str(&r.Model)
	case "input":
		return p.str(&r.Input)
	case "voice":
		var name *string
		err := p.str(&name)
		r.Voice = (*voice)(name)
		return err
	case "response_format":
		return p.str(&r.ResponseFormat)
	case "user":
		return p.str(&r.User)
	case "session_id":
		return p.str(&r.SessionID)
	case "speed":
		if p.s.Null() {
			r.Speed = nil
			return nil
		}
		var f float64
		err := p.s.Float(&f)
		r.Speed = &f
		return err
	case "provider":
		r.Provider = nil
		if !p.s.Null() {
			return jsonenc.ErrType // provider options: encoding/json's
		}
		return nil
	}
	for _, name := range speechKeys {
		if jsonenc.Is(key, name) { // written otherwise: read as if written as name
			return p.member([]byte(name), r)
		}
	}
	return p.s.Skip()
}

// speechKeys are the keys of a speech request's fields, as member has them.
var speechKeys = [...]string{"model", "input", "voice", "response_format", "user", "session_id", "speed", "provider"}

// str reads a string into *dst, or null, which clears it.
func (p *speechParser) str(dst **string) error {
	if p.s.Null() {
		*dst = nil
		return nil
	}
	text, shared, err := p.s.Text()
	if err != nil {
		return err
	}
	if len(p.slots) == 0 {
		p.slots = make([]string, speechStrings)
	}
	*dst, p.slots = &p.slots[0], p.slots[1:]
	if shared && p.shared != "" {
		end := p.s.Pos() - 1 // the closing quote
		**dst = p.shared[end-len(text) : end]
	} else {
		**dst = string(text)
	}
	return nil
}
