package responses

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/switchboard-ai/switchboard/adapters/inbound"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/chat"
)

// decode reads the fields into a request, each field decoded into the type it holds (a field of another type is a
// 400 naming it), and holds the request to the domain's rules, its errors naming the input items as the caller
// sent them.
func decode(f inbound.Fields) (chat.Request, error) {
	r := chat.Request{Format: chat.Responses}
	if err := f.ReadModels(&r, gatewayFields, checkedFields); err != nil {
		return r, err
	}
	var err error
	in := input{carried: inbound.MaxCarried}
	if raw, ok := f.Present("instructions"); ok {
		if err := in.instructions(raw); err != nil {
			return r, err
		}
	}
	raw, ok := f.Present("input")
	if !ok {
		return r, domain.Invalid("input", "is required")
	}
	if err := in.items(raw); err != nil {
		return r, err
	}
	r.Messages, r.Prepended, r.Untranslatable, r.Aside = in.msgs, in.prepended, in.native, in.aside
	if err := inbound.Field(f, "stream", &r.Stream); err != nil {
		return r, err
	}
	r.IncludeUsage = true // a Responses answer always ends with its usage
	var limit *int64
	if err := inbound.Field(f, "max_output_tokens", &limit); err != nil {
		return r, err
	}
	if limit != nil {
		if err := chat.CheckMaxTokens("max_output_tokens", *limit); err != nil {
			return r, err
		}
		r.MaxTokens = limit
	}
	if err := inbound.Field(f, "temperature", &r.Temperature); err != nil {
		return r, err
	}
	if err := inbound.Field(f, "top_p", &r.TopP); err != nil {
		return r, err
	}
	if r.Tools, err = tools(f); err != nil {
		return r, err
	}
	if r.ToolChoice, err = toolChoice(f); err != nil {
		return r, err
	}
	if r.ResponseFormat, err = textFormat(f); err != nil {
		return r, err
	}
	if err := inbound.Field(f, "previous_response_id", &r.Continues); err != nil {
		return r, err
	}
	if err := f.ReadCaller(&r); err != nil {
		return r, err
	}
	if err := r.Validate(); err != nil {
		return r, in.rename(err)
	}
	return r, inbound.CheckExtra(r.Extra)
}

// input gathers the messages of the instructions and the input items; at names the item each message came from
// (-1: the instructions), for the errors.
type input struct {
	msgs      []chat.Message
	at        []int
	prepended int
	// native is the first part of the input only an upstream that speaks the Responses API can take, and why.
	native string
	aside  []chat.Aside
	// carried is how many more JSON tokens the values passed on as they came may hold (inbound.ReadCarried).
	carried int
}

// instructions reads the instructions, a string or a list of text parts, into the system message laid before the
// input.
func (in *input) instructions(raw json.RawMessage) error {
	var text string
	if json.Unmarshal(raw, &text) != nil {
		var parts []partWire
		if json.Unmarshal(raw, &parts) != nil {
			return domain.Invalid("instructions", "must be a string")
		}
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		text = b.String()
	}
	if text == "" {
		return nil
	}
	in.add(-1, chat.Message{Role: "system", Text: true, Content: []chat.Part{{Type: "text", Text: text}}})
	in.prepended = 1
	return nil
}

func (in *input) add(at int, m chat.Message) {
	in.msgs = append(in.msgs, m)
	in.at = append(in.at, at)
}

// itemWire is an input item: a message (with or without its type), a function call or a function call's output,
// or an item of another type, which a chat conversation has no place for (see items).
type itemWire struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
	ID        json.RawMessage `json:"id"`
}

// kind is the item's type: its type member, or for an item without one the Responses API's shorthands, a message
// when it has a role and an item reference when it has an id; "" when it has none of them.
func (w itemWire) kind() string {
	switch {
	case w.Type != "":
		return w.Type
	case w.Role != "":
		return "message"
	case !inbound.IsNull(w.ID):
		return "item_reference"
	}
	return ""
}

// partWire is a content part: the members of the kinds the gateway reads.
type partWire struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	Refusal  string          `json:"refusal"`
	ImageURL json.RawMessage `json:"image_url"`
	Detail   string          `json:"detail"`
}

// items reads the input: a string (one user message) or a list of items. A function call joins the assistant
// message before it (the calls of one turn are one assistant message in chat), and makes one when there is none.
func (in *input) items(raw json.RawMessage) error {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		in.add(0, chat.Message{Role: "user", Text: true, Content: []chat.Part{{Type: "text", Text: text}}})
		return nil
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return domain.Invalid("input", "must be a string or an array of input items")
	}
	if len(items) == 0 {
		return domain.Invalid("input", "must hold at least one input item")
	}
	for i, item := range items {
		var w itemWire
		err := inbound.Object(itemField(i, ""), item, &w, "an input item object")
		typ := w.kind()
		// An item of a type chat has no place for is not read here (see default), so a member of another type
		// than itemWire's is no error for it; an item without a type goes by what itemWire read.
		readable := typ == "message" || typ == "function_call" || typ == "function_call_output"
		if err != nil && (readable || w.Type == "") {
			return err
		}
		switch typ {
		case "message":
			m := chat.Message{Role: w.Role}
			content, err := in.contentOf(w.Content, itemField(i, ".content"))
			if err != nil {
				return err
			}
			m.Content, m.Text = content, len(w.Content) > 0 && w.Content[0] == '"'
			in.add(i, m)
		case "function_call":
			tc := chat.ToolCall{ID: w.CallID, Name: w.Name, Arguments: w.Arguments}
			if n := len(in.msgs); n > 0 && in.msgs[n-1].Role == "assistant" && in.at[n-1] >= 0 {
				in.msgs[n-1].ToolCalls = append(in.msgs[n-1].ToolCalls, tc)
				continue
			}
			in.add(i, chat.Message{Role: "assistant", Null: true, ToolCalls: []chat.ToolCall{tc}})
		case "function_call_output":
			content, err := in.contentOf(w.Output, itemField(i, ".output"))
			if err != nil {
				return err
			}
			in.add(i, chat.Message{Role: "tool", ToolCallID: w.CallID, Content: content, Text: len(w.Output) > 0 && w.Output[0] == '"'})
		case "":
			return domain.Invalid(itemField(i, ".type"), "is required (a message may give its role instead)")
		default:
			// An item a chat conversation has no place for: reasoning and compaction (the provider's own, often
			// encrypted), the calls of hosted, built-in and custom tools and their outputs, MCP's items, the items
			// a client keeps of its own (Codex's configuration updates), and types the API adds later. A chat
			// upstream's request goes without them; an upstream that speaks the Responses API gets them as they
			// came. encoding/json decodes the members itemWire has, its type among them, past one of another type
			// (tool_search_call's arguments, an object).
			switch {
			case typ == "item_reference": // the item it names is the upstream store's: a chat upstream cannot go without it
				in.untranslatable(itemField(i, "") + ": an item_reference, which only the upstream's store resolves")
			case w.Role != "": // only a message has a role: this one's type is misspelt, and its text would be lost
				in.untranslatable(fmt.Sprintf("%s: unknown input item type %q", itemField(i, ".type"), typ))
			}
			a, ok := aside(item, &in.carried)
			if !ok {
				return inbound.TooMuchCarried(itemField(i, ""))
			}
			in.aside = append(in.aside, a)
		}
	}
	if len(in.msgs) == in.prepended { // none, or the instructions alone: a chat model would answer without the conversation
		in.untranslatable("input: " + noneReadable)
	}
	return nil
}

// noneReadable is what an input is refused for when it holds no item the gateway reads.
const noneReadable = "holds no message, function_call or function_call_output item"

// untranslatable notes the first part of the input a chat model cannot be sent, where and what it is
// (chat.Request.Untranslatable).
func (in *input) untranslatable(reason string) {
	if in.native == "" {
		in.native = reason
	}
}

// contentOf reads a content: a string (one text part) or a list of parts: input_text, output_text and refusal as
// text, input_image as an image, input_file and input_audio kept as they came, for an upstream that speaks the
// Responses API (chat has no such part: chat.Request.Translatable). A part of a type the gateway does not know is
// kept too, and makes the request one a chat model cannot be sent, so that a misspelt type does not drop its text
// unseen while a part the Responses API has added since still reaches an upstream that speaks it.
func (in *input) contentOf(raw json.RawMessage, field string) ([]chat.Part, error) {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return []chat.Part{{Type: "text", Text: text}}, nil
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, chat.BadContent(field)
	}
	parts := make([]chat.Part, len(items))
	for j, item := range items {
		at := field + "[" + strconv.Itoa(j) + "]"
		var p partWire
		if err := inbound.Object(at, item, &p, "a content part object with a type"); err != nil {
			return nil, err
		}
		switch p.Type {
		case "input_text", "output_text", "text":
			parts[j] = chat.Part{Type: "text", Text: p.Text}
		case "refusal":
			parts[j] = chat.Part{Type: "text", Text: p.Refusal}
		case "input_image":
			var url string
			_ = json.Unmarshal(p.ImageURL, &url)
			parts[j] = chat.Part{Type: "image_url", ImageURL: url, Detail: p.Detail}
		case "":
			return nil, domain.Invalid(at, "must be a content part object with a type")
		default:
			if p.Type != "input_file" && p.Type != "input_audio" {
				in.untranslatable(fmt.Sprintf("%s.type: unknown content part type %q", at, p.Type))
			}
			// A Responses upstream reads what text it carries (a misspelt input_text's): the guardrails scan it.
			c, ok := inbound.ReadCarried(item, &in.carried, inbound.TypeOnly)
			if !ok {
				return nil, inbound.TooMuchCarried(at)
			}
			parts[j] = chat.Part{Type: p.Type, Raw: domain.Opaque(item), Text: c.Text}
		}
	}
	return parts, nil
}

// rename names the field of a domain error as the caller sent it: messages[k] is the input item (or the
// instructions) message k came from.
func (in *input) rename(err error) error {
	var de *domain.Error
	field, _ := errFieldOf(err, &de)
	rest, ok := strings.CutPrefix(field, "messages")
	if !ok {
		return err
	}
	name := "input"
	if rest, ok = strings.CutPrefix(rest, "["); ok {
		end := strings.IndexByte(rest, ']')
		k, convErr := strconv.Atoi(rest[:max(end, 0)])
		if end < 0 || convErr != nil {
			return err
		}
		k += in.prepended // MessageField numbers the messages after the prepended ones
		rest = rest[end+1:]
		switch {
		case k < 0 || k >= len(in.at):
		case in.at[k] < 0:
			name, rest = "instructions", ""
		default:
			name = itemField(in.at[k], "")
			if strings.HasPrefix(rest, ".tool_call_id") {
				rest = ".call_id"
			}
		}
	}
	renamed := name + rest
	return de.WithMsg(strings.Replace(de.Msg, field, renamed, 1)).With("field", renamed)
}

// errFieldOf is the field a domain error names, "" when none.
func errFieldOf(err error, de **domain.Error) (string, bool) {
	if !errors.As(err, de) {
		return "", false
	}
	field, ok := (*de).Meta["field"].(string)
	return field, ok
}

// tools reads the tools: functions, and the functions of namespace tools (flattened: a chat upstream has no
// namespaces). Tools of other types (web_search, the hosted tools; custom tools, whose calls carry free text where
// a chat tool call carries JSON arguments) are left out of a chat upstream's request, and so are their calls in the
// input (see items); an upstream that speaks the Responses API gets them as they came.
func tools(f inbound.Fields) ([]chat.Tool, error) {
	raw, ok := f.Present("tools")
	if !ok {
		return nil, nil
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return nil, chat.TooManyTools("tools")
	}
	var out []chat.Tool
	for i, item := range list {
		field := fmt.Sprintf("tools[%d]", i)
		var w toolWire
		if err := inbound.Object(field, item, &w, "a tool object with a type"); err != nil {
			return nil, err
		}
		switch w.Type {
		case "function":
			t, err := w.tool(field)
			if err != nil {
				return nil, err
			}
			out = append(out, t)
		case "namespace":
			for j, inner := range w.Tools {
				if inner.Type != "function" {
					continue
				}
				t, err := inner.tool(fmt.Sprintf("%s.tools[%d]", field, j))
				if err != nil {
					return nil, err
				}
				out = append(out, t)
			}
		case "":
			return nil, domain.Invalid(field, "must be a tool object with a type")
		}
	}
	if len(out) > chat.MaxTools {
		return nil, chat.TooManyTools("tools")
	}
	return out, nil
}

// toolWire is a tool: a function, or a namespace of tools.
type toolWire struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
	Tools       []toolWire      `json:"tools"`
}

func (w toolWire) tool(field string) (chat.Tool, error) {
	if w.Name == "" {
		return chat.Tool{}, domain.Invalid(field+".name", "is required")
	}
	t := chat.Tool{Name: w.Name, Description: w.Description, Strict: w.Strict}
	if !inbound.IsNull(w.Parameters) {
		t.Parameters = domain.Opaque(w.Parameters)
		if err := domain.CheckOpaque(field+".parameters", t.Parameters); err != nil {
			return t, err
		}
	}
	return t, nil
}

// toolChoice reads tool_choice (auto, none, required, or a function by name) into chat's shape.
func toolChoice(f inbound.Fields) (domain.Opaque, error) {
	raw, ok := f.Present("tool_choice")
	if !ok {
		return nil, nil
	}
	var mode string
	if json.Unmarshal(raw, &mode) == nil {
		return domain.Opaque(raw), nil
	}
	var w struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if err := inbound.Object("tool_choice", raw, &w, "a string or an object"); err != nil {
		return nil, err
	}
	if w.Type != "function" {
		return nil, nil // a hosted tool's choice: no chat upstream has it
	}
	if w.Name == "" {
		return nil, domain.Invalid("tool_choice.name", "is required")
	}
	b, err := inbound.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": w.Name}})
	return domain.Opaque(b), err
}

// textFormat reads text.format (text, json_object, json_schema) into chat's response_format.
func textFormat(f inbound.Fields) (domain.Opaque, error) {
	raw, ok := f.Present("text")
	if !ok {
		return nil, nil
	}
	var w struct {
		Format *struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Schema      json.RawMessage `json:"schema"`
			Strict      *bool           `json:"strict"`
		} `json:"format"`
	}
	if err := inbound.Object("text", raw, &w, "an object"); err != nil {
		return nil, err
	}
	if w.Format == nil {
		return nil, nil
	}
	switch w.Format.Type {
	case "text", "":
		return nil, nil
	case "json_object":
		return domain.Opaque(`{"type":"json_object"}`), nil
	case "json_schema":
		schema := map[string]any{"name": w.Format.Name, "schema": w.Format.Schema}
		if w.Format.Description != "" {
			schema["description"] = w.Format.Description
		}
		if w.Format.Strict != nil {
			schema["strict"] = *w.Format.Strict
		}
		b, err := inbound.Marshal(map[string]any{"type": "json_schema", "json_schema": schema})
		return domain.Opaque(b), err
	}
	return nil, domain.Invalid("text.format.type", "must be text, json_object or json_schema")
}

func itemField(i int, field string) string { return "input[" + strconv.Itoa(i) + "]" + field }
