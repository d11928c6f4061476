package chatcompletions

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/switchboard-ai/switchboard/adapters/inbound"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/chat"
)

// messageWire is a message as the caller sends it. encoding/json matches its keys without regard to case ("Role"
// is role): the gateway writes the messages anew for every upstream, so no key is passed on in another case. A key
// given twice decodes into what the first one set (null leaves a string as it was).
type messageWire struct {
	Role       string         `json:"role"`
	Content    contentWire    `json:"content"`
	Name       string         `json:"name"`
	ToolCallID string         `json:"tool_call_id"`
	ToolCalls  []toolCallWire `json:"tool_calls"`
}

// contentWire is a message's content: null (or absent), a string, decoded as the message is, or a list of parts,
// kept as it came to be decoded part by part (a part of a kind the gateway does not read is passed on as it came).
// Any other value is kept for the message to refuse, once its fields read before the content pass the rules.
type contentWire struct {
	kind  byte // 0 for null, else the value's first byte
	text  string
	parts json.RawMessage
}

// UnmarshalJSON reads the content, a JSON value (a content given twice: the last).
func (c *contentWire) UnmarshalJSON(b []byte) error {
	*c = contentWire{kind: b[0]}
	switch b[0] {
	case 'n':
		c.kind = 0
	case '"':
		return json.Unmarshal(b, &c.text)
	case '[':
		c.parts = append(json.RawMessage(nil), b...)
	}
	return nil
}

type toolCallWire struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// partWire is a content part as the caller sends it: the members of the kinds the gateway reads. A part of another
// kind is kept as it came.
type partWire struct {
	Type string `json:"type"`
	Text string `json:"text"`
	// CacheControl is Anthropic's prompt-caching marker, which OpenRouter's chat completions take on text parts.
	CacheControl json.RawMessage `json:"cache_control"`
	ImageURL     *struct {
		URL    string `json:"url"`
		Detail string `json:"detail"`
	} `json:"image_url"`
}

// messages decodes the messages array, all at once, and, when that fails, one by one, to name the message that
// its wire format refuses (memberTypes says how). The messages are refused in order: the first that its wire format
// or the domain's rules refuse is named, those before it read and held to the rules.
func messages(raw json.RawMessage) ([]chat.Message, error) {
	carried := inbound.MaxCarried
	var ws []*messageWire
	if json.Unmarshal(raw, &ws) == nil && !slices.Contains(ws, nil) {
		out := make([]chat.Message, len(ws))
		for i, w := range ws {
			m, err := w.message(i, &carried)
			if err != nil {
				return nil, refused(out, i, err)
			}
			out[i] = m
		}
		return out, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, domain.Invalid("messages", "must be an array of messages")
	}
	out := make([]chat.Message, 0, len(items))
	for i, item := range items {
		w, err := decodeMessage(item, i)
		var m chat.Message
		if err == nil {
			m, err = w.message(i, &carried)
		}
		if err != nil {
			return nil, refused(out, i, err)
		}
		out = append(out, m)
	}
	return out, nil
}

// refused is the refusal of messages[i], which its wire format refuses (err), unless one of the messages before it
// (read into out) breaks a rule of the domain's: that one is then the first refused.
func refused(out []chat.Message, i int, err error) error {
	if derr := (chat.Request{Messages: out}).CheckMessagesBefore(i); derr != nil {
		return derr
	}
	return err
}

// decodeMessage decodes messages[i], item, an object: a member of another type than the message's (a role that is a
// number, tool_calls an object) is refused naming it, anything else that is no message object naming the message.
func decodeMessage(item json.RawMessage, i int) (*messageWire, error) {
	w := new(messageWire)
	if !isObject(item) {
		return nil, notMessage(i)
	}
	if err := json.Unmarshal(item, w); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			name, _, _ := strings.Cut(te.Field, ".")
			if why, ok := memberTypes[name]; ok {
				return nil, domain.Invalid(messageField(i, "."+name), why)
			}
		}
		return nil, notMessage(i)
	}
	return w, nil
}

// memberTypes says what each member a message is decoded for must be; the content is decoded apart.
var memberTypes = map[string]string{
	"role":         "must be a string",
	"name":         "must be a string",
	"tool_call_id": "must be a string",
	"tool_calls":   "must be an array of tool calls, each an object {id, type, function: {name, arguments}} of strings",
}

// notMessage refuses messages[i], which is JSON but no message.
func notMessage(i int) error {
	return domain.Invalid(messageField(i, ""), "must be a message object with a role and content")
}

// message is messages[i] in the domain's terms: its content null (or absent), a string (one text part) or parts;
// left is what contentParts reads parts of other kinds with.
func (w *messageWire) message(i int, left *int) (chat.Message, error) {
	m := chat.Message{Role: w.Role, Name: w.Name, ToolCallID: w.ToolCallID}
	if len(w.ToolCalls) > 0 { // a message with [] is written as one without
		m.ToolCalls = make([]chat.ToolCall, len(w.ToolCalls))
		for k, tc := range w.ToolCalls {
			m.ToolCalls[k] = chat.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments}
		}
	}
	switch w.Content.kind {
	case 0:
		m.Null = true
	case '"':
		m.Text, m.Content = true, []chat.Part{{Type: "text", Text: w.Content.text}}
	case '[':
		parts, err := contentParts(w.Content.parts, i, left)
		if err != nil {
			return m, err
		}
		m.Content = parts
	default:
		return m, chat.BadContent(messageField(i, ".content"))
	}
	return m, nil
}

// contentParts decodes the parts of messages[i]: a text, an image, or a part of another kind, kept as it came with
// the text it carries for the guardrails (inbound.ReadCarried, with the request's left tokens).
func contentParts(raw json.RawMessage, i int, left *int) ([]chat.Part, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, chat.BadContent(messageField(i, ".content"))
	}
	parts := make([]chat.Part, len(items))
	for j, item := range items {
		var p partWire
		if !isObject(item) || json.Unmarshal(item, &p) != nil {
			return nil, domain.Invalid(messageField(i, ".content["+strconv.Itoa(j)+"]"), "must be a content part object with a type")
		}
		switch p.Type {
		case "text":
			parts[j] = chat.Part{Type: "text", Text: p.Text}
			if !inbound.IsNull(p.CacheControl) {
				if err := domain.CheckOpaque(messageField(i, ".content["+strconv.Itoa(j)+"].cache_control"), domain.Opaque(p.CacheControl)); err != nil {
					return nil, err
				}
				parts[j].CacheControl = domain.Opaque(p.CacheControl)
			}
		case "image_url":
			parts[j] = chat.Part{Type: "image_url"}
			if p.ImageURL != nil {
				parts[j].ImageURL, parts[j].Detail = p.ImageURL.URL, p.ImageURL.Detail
			}
		default:
			c, ok := inbound.ReadCarried(item, left, inbound.TypeOnly)
			if !ok {
				return nil, inbound.TooMuchCarried(messageField(i, ".content["+strconv.Itoa(j)+"]"))
			}
			parts[j] = chat.Part{Type: p.Type, Raw: domain.Opaque(item), Text: c.Text}
		}
	}
	return parts, nil
}

func messageField(i int, field string) string { return "messages[" + strconv.Itoa(i) + "]" + field }

// isObject reports a JSON value that is an object.
func isObject(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}
