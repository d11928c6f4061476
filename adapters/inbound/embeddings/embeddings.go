// Package embeddings is the embeddings request body (POST /embeddings), as OpenAI and the reference have it and
// the gateway reads it: counted on its bytes, decoded by encoding/json into its fields and then into the domain's
// embedding.Request. Fields the gateway does not read are not sent on: provider.options is the passthrough.
package embeddings

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/switchboard-ai/switchboard/adapters/inbound"
	"github.com/switchboard-ai/switchboard/adapters/internal/jsonenc"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/domain/embedding"
)

// limits are the bounds counted on a body's bytes before it is decoded: its fields, input (a list of texts or
// token arrays, or one token array: up to embedding.MaxTotalTokens items, held to embedding.MaxInputs inputs when
// decoded), the ids of its token arrays, and provider, which holds free-form options decoded whole.
var limits = inbound.NewLimits(chat.MaxFields, map[string]inbound.Limit{
	"input": {Items: embedding.MaxTotalTokens, Refuse: func(string, bool) error { return embedding.TooManyInputs("input") }},
	"input[]": {Items: embedding.MaxTotalTokens, Total: embedding.MaxTotalTokens,
		Refuse: func(path string, _ bool) error { return embedding.TooManyTokens(path) }},
	"provider": {Free: true},
})

// Decode reads body into a request held to the domain's rules (embedding.Request.Validate): its lists counted
// first, then its fields decoded, each of the wrong type a 400 naming it.
func Decode(body []byte) (embedding.Request, error) {
	var r embedding.Request
	if err := limits.Check(body); err != nil {
		return r, err
	}
	f, err := inbound.DecodeFields(body)
	if err != nil {
		return r, err
	}
	if err := inbound.Field(f, "model", &r.Model); err != nil {
		return r, err
	}
	if r.Inputs, r.Single, err = inputs(f); err != nil {
		return r, err
	}
	var format string
	if err := inbound.Field(f, "encoding_format", &format); err != nil {
		return r, err
	}
	r.Format = embedding.Format(format)
	if err := inbound.Field(f, "dimensions", &r.Dimensions); err != nil {
		return r, err
	}
	for _, s := range []struct {
		name string
		dst  *string
	}{{"user", &r.User}, {"session_id", &r.SessionID}} {
		if err := inbound.Field(f, s.name, s.dst); err != nil {
			return r, err
		}
	}
	if raw, ok := f.Present("provider"); ok {
		if r.Options, r.Route, err = inbound.Provider(raw); err != nil {
			return r, err
		}
	}
	return r, r.Validate()
}

// inputs reads input: a string, a token array, or a list of strings or of token arrays (all of one kind, as
// OpenAI takes them). single says it was one string or one token array.
func inputs(f inbound.Fields) ([]embedding.Input, bool, error) {
	raw, ok := f.Present("input")
	if !ok {
		return nil, false, domain.Invalid("input", "is required")
	}
	if kind(raw) == '"' {
		text, err := textOf("input", raw)
		return []embedding.Input{{Text: text}}, true, err
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil || len(items) == 0 {
		return nil, false, embedding.TooManyInputs("input")
	}
	switch kind(items[0]) {
	case '0': // one token array
		tokens, err := tokensOf("input", raw)
		if err != nil {
			return nil, false, err
		}
		return []embedding.Input{{Tokens: tokens}}, true, nil
	case '"', '[':
	case 'n':
		return nil, false, domain.Invalid("input[0]", "must be a string, a token id or an array of token ids, not null")
	default:
		return nil, false, embedding.TooManyInputs("input")
	}
	if len(items) > embedding.MaxInputs {
		return nil, false, embedding.TooManyInputs("input")
	}
	out := make([]embedding.Input, len(items))
	for i, item := range items {
		field := fmt.Sprintf("input[%d]", i)
		if kind(item) != kind(items[0]) {
			return nil, false, domain.Invalid(field, "must be of the kind of input[0]: the inputs are all strings or all token arrays")
		}
		var err error
		if kind(item) == '"' {
			out[i].Text, err = textOf(field, item)
		} else {
			out[i].Tokens, err = tokensOf(field, item)
		}
		if err != nil {
			return nil, false, err
		}
	}
	return out, false, nil
}

// textOf reads a string input: its JSON must spell its text exactly, UTF-8 with no lone surrogate escaped
// (jsonenc.Intact): encoding/json mends both into U+FFFD, which would embed another text than the caller's.
func textOf(field string, raw json.RawMessage) (string, error) {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		quoted := bytes.TrimSpace(raw) // a JSON string: its bytes between quotes
		if jsonenc.Intact(quoted[1 : len(quoted)-1]) {
			return text, nil
		}
	}
	return "", domain.Invalid(field, "must be a string of valid UTF-8")
}

// tokensOf reads a token array: each a token id, an integer (encoding/json reads null into an int as 0).
func tokensOf(field string, raw json.RawMessage) ([]int64, error) {
	var ids []*int64
	if err := json.Unmarshal(raw, &ids); err != nil {
		return nil, domain.Invalid(field, "must be a string or an array of token ids (integers)")
	}
	tokens := make([]int64, len(ids))
	for j, id := range ids {
		if id == nil {
			return nil, domain.Invalid(fmt.Sprintf("%s[%d]", field, j), "must be a token id (an integer), not null")
		}
		tokens[j] = *id
	}
	return tokens, nil
}

// kind is what a JSON value is, told by its first byte: '"' a string, '[' an array, '0' a number, 'n' null, 0
// anything else.
func kind(raw json.RawMessage) byte {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return 0
	}
	switch c := raw[0]; {
	case c == '"' || c == '[':
		return c
	case c == '-' || '0' <= c && c <= '9':
		return '0'
	case c == 'n':
		return 'n'
	}
	return 0
}
