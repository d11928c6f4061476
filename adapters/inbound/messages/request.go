package messages

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/switchboard-ai/switchboard/adapters/inbound"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/chat"
)

// decode reads the fields into a request: what the gateway reads (the model, the stream, the completion limit, the
// texts its guardrails scan and its estimate counts) and what an upstream of another format is sent, translated
// (the conversation, the sampling, the tools). Every field but the gateway's own also goes in Extra, as it came, for
// an upstream that speaks Messages. Each object of the conversation is read by its members' exact names, and one
// that names a member the gateway reads in another case is refused, as an upstream that matches names otherwise
// would read another text than the one the guardrails passed.
func decode(f inbound.Fields) (chat.Request, error) {
	r := chat.Request{Format: chat.Messages}
	if err := f.ReadModels(&r, gatewayFields, checkedFields); err != nil {
		return r, err
	}
	var err error
	if r.Messages, err = system(f); err != nil {
		return r, err
	}
	r.Prepended = len(r.Messages) // the caller's messages[i] is Messages[i+Prepended]
	raw, ok := f.Present("messages")
	if !ok {
		return r, domain.Invalid("messages", "is required")
	}
	msgs, err := conversation(raw)
	if err != nil {
		return r, err
	}
	r.Messages = append(r.Messages, msgs...)
	if err := inbound.Field(f, "stream", &r.Stream); err != nil {
		return r, err
	}
	r.IncludeUsage = r.Stream // message_start and message_delta always carry the usage
	var limit *int64
	if err := inbound.Field(f, "max_tokens", &limit); err != nil {
		return r, err
	}
	if limit == nil {
		return r, domain.Invalid("max_tokens", "is required (the most tokens the answer may have)")
	}
	if err := chat.CheckMaxTokens("max_tokens", *limit); err != nil {
		return r, err
	}
	r.MaxTokens = limit
	if err := inbound.Field(f, "temperature", &r.Temperature); err != nil {
		return r, err
	}
	if r.Temperature != nil && (*r.Temperature < 0 || *r.Temperature > 1) {
		return r, domain.Invalid("temperature", "must be a number from 0 to 1")
	}
	if err := inbound.Field(f, "top_p", &r.TopP); err != nil {
		return r, err
	}
	if err := inbound.Field(f, "stop_sequences", &r.Stop); err != nil {
		return r, err
	}
	if r.Tools, err = tools(f); err != nil {
		return r, err
	}
	if r.ToolChoice, err = toolChoice(f); err != nil {
		return r, err
	}
	if err := f.ReadCaller(&r); err != nil {
		return r, err
	}
	if err := r.Validate(); err != nil {
		return r, err
	}
	return r, inbound.CheckExtra(r.Extra)
}

// blockOwn reports the members of a block that name or mark it.
func blockOwn(member string) bool {
	switch member {
	case "type", "id", "tool_use_id", "signature":
		return true
	}
	return false
}

// blockNames are the members of a content block the gateway reads.
var blockNames = []string{"type", "text", "source", "id", "name", "input", "tool_use_id", "content", "cache_control",
	"media_type", "data", "url"}

// object decodes raw, which must be a JSON object, into its fields, refusing a member named as one of names in
// another case; what names it in errors is path.
func object(raw json.RawMessage, path, what string, names []string) (inbound.Fields, error) {
	var f inbound.Fields
	if trimmed := bytes.TrimSpace(raw); len(trimmed) == 0 || trimmed[0] != '{' || json.Unmarshal(raw, &f) != nil {
		return nil, domain.Invalid(path, "must be "+what)
	}
	if err := f.FirstSpelledIn(path, names); err != nil {
		return nil, err
	}
	return f, nil
}

// str reads f[name], a string when present, naming path.name when it is not.
func str(f inbound.Fields, path, name string) (string, error) {
	var s string
	if raw, ok := f.Present(name); ok && json.Unmarshal(raw, &s) != nil {
		return "", domain.Invalid(path+"."+name, "must be a string")
	}
	return s, nil
}

// system reads the system prompt, a string or text blocks, as a system message (none when it is absent or empty).
func system(f inbound.Fields) ([]chat.Message, error) {
	raw, ok := f.Present("system")
	if !ok {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return nil, nil
		}
		if err := domain.CheckText("system", s); err != nil {
			return nil, err
		}
		return []chat.Message{{Role: "system", Content: []chat.Part{{Type: "text", Text: s}}, Text: true}}, nil
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, domain.Invalid("system", "must be a string or an array of text blocks")
	}
	m := chat.Message{Role: "system"}
	for i, item := range items {
		path := "system[" + strconv.Itoa(i) + "]"
		b, err := object(item, path, "a text block", blockNames)
		if err != nil {
			return nil, err
		}
		p, err := part(b, path)
		if err != nil {
			return nil, err
		}
		if p.Type != "text" {
			return nil, domain.Invalid(path+".type", `must be "text"`)
		}
		m.Content = append(m.Content, p)
	}
	if len(m.Content) == 0 {
		return nil, nil
	}
	return []chat.Message{m}, nil
}

// conversation reads the messages, each a user's, an assistant's or a system message, into the domain's: a user's tool results become
// tool messages before the rest of its content (as OpenAI's format has them right after the assistant's calls), an
// assistant's tool_use blocks its tool calls. Blocks of other kinds (documents, thinking) are parts kept as they
// came, for an upstream of this format; the others' adapters drop them.
func conversation(raw json.RawMessage) ([]chat.Message, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, domain.Invalid("messages", "must be an array of messages")
	}
	if len(items) == 0 {
		return nil, chat.TooManyMessages("messages")
	}
	out := make([]chat.Message, 0, len(items))
	carried := inbound.MaxCarried
	for i, item := range items {
		path := "messages[" + strconv.Itoa(i) + "]"
		f, err := object(item, path, "a message object with a role and content", []string{"role", "content"})
		if err != nil {
			return nil, err
		}
		role, err := str(f, path, "role")
		if err != nil {
			return nil, err
		}
		if role != "user" && role != "assistant" && role != "system" { // Claude Code sends system messages among them
			return nil, domain.Invalid(path+".role", `must be "user", "assistant" or "system"`)
		}
		content, ok := f.Present("content")
		if !ok {
			return nil, domain.Invalid(path+".content", "is required")
		}
		msgs, err := message(role, content, path, &carried)
		if err != nil {
			return nil, err
		}
		out = append(out, msgs...)
	}
	return out, nil
}

// message reads one message of role: its content a string or blocks. A block of another kind is kept as it came,
// with the text it carries for the guardrails in a user's or a system message (carry).
func message(role string, content json.RawMessage, path string, left *int) ([]chat.Message, error) {
	var s string
	if json.Unmarshal(content, &s) == nil {
		if err := domain.CheckText(path+".content", s); err != nil {
			return nil, err
		}
		return []chat.Message{{Role: role, Content: []chat.Part{{Type: "text", Text: s}}, Text: true}}, nil
	}
	var items []json.RawMessage
	if json.Unmarshal(content, &items) != nil {
		return nil, chat.BadContent(path + ".content")
	}
	var results []chat.Message
	m := chat.Message{Role: role}
	for j, item := range items {
		at := path + ".content[" + strconv.Itoa(j) + "]"
		b, err := object(item, at, "a content block object with a type", blockNames)
		if err != nil {
			return nil, err
		}
		typ, err := str(b, at, "type")
		if err != nil {
			return nil, err
		}
		switch {
		case typ == "tool_use" && role == "assistant":
			tc, err := toolUse(b, at)
			if err != nil {
				return nil, err
			}
			m.ToolCalls = append(m.ToolCalls, tc)
		case typ == "tool_result" && role == "user":
			r, err := toolResult(b, at, left)
			if err != nil {
				return nil, err
			}
			results = append(results, r)
		default:
			p, err := part(b, at)
			if err != nil {
				return nil, err
			}
			p.Raw = domain.Opaque(item)
			if role != "assistant" {
				if err := carry(&p, at, left); err != nil {
					return nil, err
				}
			}
			m.Content = append(m.Content, p)
		}
	}
	if len(m.Content) == 0 && len(m.ToolCalls) > 0 {
		m.Null = true
	}
	if len(m.Content) == 0 && len(m.ToolCalls) == 0 {
		if len(results) > 0 {
			return results, nil
		}
		return nil, domain.Invalid(path+".content", "must hold at least one content block")
	}
	return append(results, m), nil
}

// part reads a content block as a part: a text, an image (its base64 data as a data: URL, or its URL), or a block of
// another kind, kept as it came (Raw, set by the caller).
func part(b inbound.Fields, at string) (chat.Part, error) {
	typ, err := str(b, at, "type")
	if err != nil {
		return chat.Part{}, err
	}
	switch typ {
	case "":
		return chat.Part{}, domain.Invalid(at+".type", "is required")
	case "text":
		text, err := str(b, at, "text")
		if err != nil {
			return chat.Part{}, err
		}
		if err := domain.CheckText(at+".text", text); err != nil {
			return chat.Part{}, err
		}
		p := chat.Part{Type: "text", Text: text}
		if cc, ok := b.Present("cache_control"); ok {
			p.CacheControl = domain.Opaque(cc)
		}
		return p, nil
	case "image":
		raw, ok := b.Present("source")
		if !ok {
			return chat.Part{}, domain.Invalid(at+".source", "is required")
		}
		src, err := object(raw, at+".source", "an image source object", blockNames)
		if err != nil {
			return chat.Part{}, err
		}
		url, err := imageURL(src, at+".source")
		if err != nil {
			return chat.Part{}, err
		}
		return chat.Part{Type: "image_url", ImageURL: url}, nil
	}
	return chat.Part{Type: typ}, nil
}

// imageURL is an image source as a URL: base64 data as a data: URL.
func imageURL(src inbound.Fields, at string) (string, error) {
	typ, err := str(src, at, "type")
	if err != nil {
		return "", err
	}
	switch typ {
	case "base64":
		mediaType, err := str(src, at, "media_type")
		if err != nil {
			return "", err
		}
		data, err := str(src, at, "data")
		if err != nil {
			return "", err
		}
		if mediaType == "" || data == "" {
			return "", domain.Invalid(at, "needs a media_type and data")
		}
		return "data:" + mediaType + ";base64," + data, nil
	case "url":
		url, err := str(src, at, "url")
		if err != nil {
			return "", err
		}
		if url == "" {
			return "", domain.Invalid(at+".url", "is required")
		}
		return url, nil
	}
	return "", domain.Invalid(at+".type", `must be "base64" or "url"`)
}

// toolUse reads an assistant's tool_use block as a tool call: its input, a JSON object, as the call's arguments.
func toolUse(b inbound.Fields, at string) (chat.ToolCall, error) {
	id, err := str(b, at, "id")
	if err != nil {
		return chat.ToolCall{}, err
	}
	name, err := str(b, at, "name")
	if err != nil {
		return chat.ToolCall{}, err
	}
	if id == "" || name == "" {
		return chat.ToolCall{}, domain.Invalid(at, "needs an id and a name")
	}
	args := "{}"
	if input, ok := b.Present("input"); ok {
		if err := domain.CheckOpaque(at+".input", domain.Opaque(input)); err != nil {
			return chat.ToolCall{}, err
		}
		args = string(bytes.TrimSpace(input))
	}
	return chat.ToolCall{ID: id, Name: name, Arguments: args}, nil
}

// carry gives p, a block read from the caller's own message, the text a block of another kind carries, for the
// guardrails (a document's, a search result's: inbound.ReadCarried, with the request's left tokens). A block of the
// model's (an assistant message's: thinking, a server tool's result) goes back to it as it came, unscanned.
func carry(p *chat.Part, at string, left *int) error {
	if p.Type == "text" || p.Type == "image_url" {
		return nil
	}
	c, ok := inbound.ReadCarried(json.RawMessage(p.Raw), left, blockOwn)
	if !ok {
		return inbound.TooMuchCarried(at)
	}
	p.Text = c.Text
	return nil
}

// toolResult reads a user's tool_result block as a tool message: its content a string or blocks, whose texts it
// keeps (an image in a result is dropped for upstreams of other formats: their tool messages hold text). What its
// blocks of other kinds carry (a search result's, a document's text: carry) is a second part, the content as it
// came, for the guardrails to scan: the tool message's text stays the text blocks'.
func toolResult(b inbound.Fields, at string, left *int) (chat.Message, error) {
	id, err := str(b, at, "tool_use_id")
	if err != nil {
		return chat.Message{}, err
	}
	if id == "" {
		return chat.Message{}, domain.Invalid(at+".tool_use_id", "is required")
	}
	m := chat.Message{Role: "tool", ToolCallID: id, Text: true}
	var text strings.Builder
	var carried []string
	var content json.RawMessage
	if raw, ok := b.Present("content"); ok {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			text.WriteString(s)
		} else {
			var items []json.RawMessage
			if json.Unmarshal(raw, &items) != nil {
				return chat.Message{}, chat.BadContent(at + ".content")
			}
			content = raw
			for k, item := range items {
				inner := fmt.Sprintf("%s.content[%d]", at, k)
				ib, err := object(item, inner, "a content block object with a type", blockNames)
				if err != nil {
					return chat.Message{}, err
				}
				p, err := part(ib, inner)
				if err != nil {
					return chat.Message{}, err
				}
				if p.Type == "text" {
					text.WriteString(p.Text)
					continue
				}
				p.Raw = domain.Opaque(item)
				if err := carry(&p, inner, left); err != nil {
					return chat.Message{}, err
				}
				if p.Text != "" {
					carried = append(carried, p.Text)
				}
			}
		}
	}
	if err := domain.CheckText(at+".content", text.String()); err != nil {
		return chat.Message{}, err
	}
	m.Content = []chat.Part{{Type: "text", Text: text.String()}}
	if len(carried) > 0 {
		m.Content = append(m.Content, chat.Part{Type: "tool_result_content", Raw: domain.Opaque(content), Text: strings.Join(carried, "\n")})
	}
	return m, nil
}

// tools reads the tools: a custom tool (a name, a description, its input_schema) is one the domain's request offers
// every upstream; a server tool (a type of Anthropic's own: web_search_20250305...) goes only to an upstream that
// speaks Messages, in Extra.
func tools(f inbound.Fields) ([]chat.Tool, error) {
	raw, ok := f.Present("tools")
	if !ok {
		return nil, nil
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, chat.TooManyTools("tools")
	}
	var out []chat.Tool
	for i, item := range items {
		at := "tools[" + strconv.Itoa(i) + "]"
		t, err := object(item, at, "a tool object", []string{"type", "name", "description", "input_schema"})
		if err != nil {
			return nil, err
		}
		typ, err := str(t, at, "type")
		if err != nil {
			return nil, err
		}
		if typ != "" && typ != "custom" {
			continue
		}
		name, err := str(t, at, "name")
		if err != nil {
			return nil, err
		}
		if name == "" {
			return nil, domain.Invalid(at+".name", "is required")
		}
		desc, err := str(t, at, "description")
		if err != nil {
			return nil, err
		}
		tool := chat.Tool{Name: name, Description: desc}
		if schema, ok := t.Present("input_schema"); ok {
			tool.Parameters = domain.Opaque(schema)
			if err := domain.CheckOpaque(at+".input_schema", tool.Parameters); err != nil {
				return nil, err
			}
		}
		out = append(out, tool)
	}
	return out, nil
}

// toolChoice reads tool_choice ({"type": "auto" | "any" | "tool" | "none", "name"}) into the domain's, which is
// OpenAI's: auto, required, none, or the named function.
func toolChoice(f inbound.Fields) (domain.Opaque, error) {
	raw, ok := f.Present("tool_choice")
	if !ok {
		return nil, nil
	}
	c, err := object(raw, "tool_choice", `an object {"type": "auto" | "any" | "tool" | "none"}`, []string{"type", "name"})
	if err != nil {
		return nil, err
	}
	typ, err := str(c, "tool_choice", "type")
	if err != nil {
		return nil, err
	}
	switch typ {
	case "auto":
		return domain.Opaque(`"auto"`), nil
	case "any":
		return domain.Opaque(`"required"`), nil
	case "none":
		return domain.Opaque(`"none"`), nil
	case "tool":
		name, err := str(c, "tool_choice", "name")
		if err != nil {
			return nil, err
		}
		if name == "" {
			return nil, domain.Invalid("tool_choice.name", "is required")
		}
		out, _ := inbound.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": name}})
		return domain.Opaque(out), nil
	}
	return nil, domain.Invalid("tool_choice.type", `must be "auto", "any", "tool" or "none"`)
}
