package openai

import (
	"bytes"
	"encoding/json"
)

// object writes a JSON object whose members come in the order they are added, each group of them encoded by
// encoding/json: a map's (its keys sorted, as encoding/json writes them) or a struct's (in the order of its
// fields). Order matters in a request's body: the gateway's own fields are added last, so that an upstream that
// matches keys without regard to case and takes the last (encoding/json's way, Ollama's) reads the gateway's, not
// an option or a caller's field that names one of them otherwise. Strings are written with <, > and & as they are.
type object struct {
	buf bytes.Buffer
	enc *json.Encoder
	err error
}

// newObject starts an object in a buffer of size bytes.
func newObject(size int) *object {
	o := &object{}
	o.buf.Grow(size)
	o.buf.WriteByte('{')
	o.enc = json.NewEncoder(&o.buf)
	o.enc.SetEscapeHTML(false)
	return o
}

// add writes the members of v, a map or a struct, after those written before: v as encoding/json writes it, less
// its braces (and the newline the encoder ends it with); a nil map has none. A value that encoding/json cannot
// write (a NaN) fails the object.
func (o *object) add(v any) {
	if o.err != nil {
		return
	}
	at := o.buf.Len()
	if o.err = o.enc.Encode(v); o.err != nil {
		return
	}
	b := o.buf.Bytes()
	members := b[at+1 : len(b)-2] // {members}\n
	switch {
	case b[at] != '{' || len(members) == 0: // null, {}
		o.buf.Truncate(at)
	case at == 1: // the first: in place of the brace
		o.buf.Truncate(at + copy(b[at:], members))
	default:
		b[at] = ','
		o.buf.Truncate(len(b) - 2)
	}
}

// bytes ends the object and returns it.
func (o *object) bytes() ([]byte, error) {
	if o.err != nil {
		return nil, o.err
	}
	o.buf.WriteByte('}')
	return o.buf.Bytes(), nil
}

// options are the passthrough options that the call's own fields do not name (sent says which they name): added
// before the call's own fields, none when every option is named (most calls have none).
func options(opts map[string]any, sent func(key string) bool) map[string]any {
	var out map[string]any
	for k, v := range opts {
		if sent(k) {
			continue
		}
		if out == nil {
			out = make(map[string]any, len(opts))
		}
		out[k] = v
	}
	return out
}
