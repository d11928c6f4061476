package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/jsonenc/jsonenctest"
)

// messageSeeds are messages arrays as clients send them and as they should not: every kind of content and part,
// each refusal, and what encoding/json reads its own way (keys in another case or given twice, null, escapes,
// invalid UTF-8, a list of tool calls given twice).
var messageSeeds = []string{
	`[{"role":"system","content":"Be terse."},{"role":"user","content":"Hi there"}]`,
	` [ {"role" : "user" , "content" : "a\"b\\c\u00e9\ud83d\ude00\n"} ] `,
	`[{"role":"user","content":[{"type":"text","text":"What is this?"},{"type":"image_url","image_url":{"url":"https://x/a.png","detail":"low"}}]}]`,
	`[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AAA=","format":"wav"}} , {"type":"file","text":"kept?"}]}]`,
	`[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}}]},` +
		`{"role":"tool","tool_call_id":"c1","content":"42","name":"f"}]`,
	`[{"role":"assistant","tool_calls":[{"id":"c1","function":{"name":"f"}}]}]`,
	`[{"role":"assistant","content":"","tool_calls":[]}]`,
	`[{"role":"developer","content":[]}]`,
	`[{"ROLE":"user","Content":"x","NAME":"n","Tool_Call_Id":"t"}]`,
	`[{"rolE":"user","content":"x","extra":{"deep":[1,2,{"a":null}]}}]`,
	"[{\"role\":\"user\",\"content\":\"\xff\xfeok\"}]",
	"[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\xc3\"}]}]",
	`[{"role":"user","content":"a","content":[{"type":"text","text":"b"}]}]`,
	`[{"role":"user","content":5,"content":"fine"}]`,
	`[{"role":"user","content":"x","role":null}]`,
	`[{"role":"user","content":"x","name":"a","name":null}]`,
	`[{"role":"assistant","content":null,"tool_calls":[{"id":"a","function":{"name":"f"}},{"id":"b","function":{"name":"g"}}],"tool_calls":[{"id":"c"}]}]`,
	`[{"role":"assistant","content":null,"tool_calls":[{"id":"a","function":{"name":"f"}},{"id":"b","function":{"name":"g"}}],"tool_calls":[{"id":"c"}],"tool_calls":[{},{}]}]`,
	`[{"role":"assistant","content":null,"tool_calls":[{"id":"a","function":{"name":"f"}}],"tool_calls":[],"tool_calls":[{"id":"b"}]}]`,
	`[{"role":"assistant","content":null,"tool_calls":[{"id":"a","function":{"name":"f"}}],"tool_calls":null}]`,
	`[{"role":"assistant","content":null,"tool_calls":[null,{"id":"a","function":null}]}]`,
	`[{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":null,"function":{"name":"f","name":null}}]}]`,
	`[{"role":"user","content":[{"type":"text","text":"a","text":null,"type":null}]}]`,
	`[{"role":"user","content":[{"type":"image_url","image_url":{"url":"u"},"image_url":{"detail":"high"}}]}]`,
	`[{"role":"user","content":[{"type":"image_url","image_url":null}]}]`,
	`[{"role":"user","content":[{"type":"image_url","image_url":{"url":""}}]}]`,
	`[{"role":"user","content":[{"type":"text","text":5}]}]`,
	`[{"role":"user","content":[{"type":"other","image_url":"u"}]}]`,
	`[{"role":"user","content":[null]}]`,
	`[{"role":"user","content":[5]}]`,
	`[{"role":"user","content":[{"text":"no type"}]}]`,
	`[{"role":"user","content":[{"type":""}]}]`,
	`[{"role":"user","content":{}}]`,
	`[{"role":"user","content":true}]`,
	`[{"role":"user"}]`,
	`[{"role":"robot","content":"x"}]`,
	`[{"role":"","content":"x"}]`,
	`[{"content":"x"}]`,
	`[{"role":"tool","content":"x"}]`,
	`[{"role":"tool","content":"x","tool_call_id":null}]`,
	`[{"role":"assistant","content":null,"tool_calls":[{"id":"a"}]}]`,
	`[{"role":"assistant","content":null,"tool_calls":[{"function":{"name":"f"}}]}]`,
	`[{"role":5,"content":"x"}]`,
	`[{"role":"user","content":"x","name":5}]`,
	`[{"role":"user","content":"x","tool_calls":{}}]`,
	`[{"role":"user","content":"x","tool_calls":[5]}]`,
	`[{"role":"user","content":"x","tool_calls":[{"type":5}]}]`,
	`[{"role":"user","content":"x","tool_calls":[{"function":[]}]}]`,
	`[{"role":"user","content":"x","tool_calls":[{"function":{"arguments":{}}}]}]`,
	`[{"role":"robot","content":"x"},5]`,
	`[{"role":"user","content":"x"},null,{"role":"robot"}]`,
	`[{"role":"user","content":"x"},"x"]`,
	`[{"role":"user","content":[{"type":"text"}, 7]},{"role":5}]`,
	`[{"role":"user","content":[7]},{"role":"user","content":"x"`,
	`[{"role":"robot"},{"role":"user","content":"x"},]`,
	`[{"role":"user","content":"x"}] x`,
	`[]`, `null`, `{}`, `"x"`, `5`, `[5]`, `[null]`, `[[]]`, ``, `[`, `[{`, `[{"role":"user","content":"x\u00"}]`,
}

// FuzzMessages holds readMessages, which reads the messages in one pass with jsonenc.Scanner, to their decoding
// by encoding/json it replaced (decodeMessagesJSON): the same messages, or the same error.
func FuzzMessages(f *testing.F) { jsonenctest.Seeds(f, messageSeeds, checkMessages) }

// TestMessagesAtBounds is FuzzMessages at the bounds, on inputs too long to be seeds the fuzzer mutates at speed:
// the most messages and parts, one past, and nesting past encoding/json's limit.
func TestMessagesAtBounds(t *testing.T) {
	// parts is a message of n text parts; the content parts of all the messages are held to MaxTotalParts.
	parts := func(n int) string {
		return `{"role":"user","content":[` + strings.Repeat(`{"type":"text","text":"a"},`, n-1) + `{"type":"text","text":"a"}]}`
	}
	allParts := strings.Repeat(parts(MaxParts)+",", MaxTotalParts/MaxParts-1)
	for _, raw := range []string{
		`[` + allParts + parts(MaxParts) + `]`,
		`[` + allParts + parts(MaxParts) + `,{"role":"user","content":"a string is no part"}]`,
		`[` + allParts + parts(MaxParts) + `,{"role":"user","content":[]}]`,
		`[` + allParts + parts(MaxParts) + `,{"role":"user","content":[{"type":"text"}]}]`,
		`[` + allParts + parts(MaxParts) + `,{"role":"robot","content":[{"type":"text"}]}]`,
		`[` + allParts + parts(MaxParts-1) + `,{"role":"user","content":[{"type":"text"},{"type":"text"}]}]`,
		`[` + allParts + parts(MaxParts-1) + `,{"role":"user","content":[{"type":"text"},5]}]`,
		`[` + allParts + parts(MaxParts-1) + `,{"role":"user","content":[5,{"type":"text"}]}]`,
		`[` + allParts + parts(MaxParts-1) + `,{"role":"user","content":[{"type":"text"},` + strings.Repeat(`{"type":"text"},`, MaxParts) + `{"type":"text"}]}]`,
		`[{"role":"user","content":"x"}` + strings.Repeat(`,{"role":"robot"}`, MaxMessages-1) + `]`,
		`[{"role":"user","content":"x"}` + strings.Repeat(`,{"role":"robot"}`, MaxMessages) + `]`,
		`[{"role":"user","content":[` + strings.Repeat(`{"type":"text","text":"a"},`, MaxParts-1) + `{"type":"text"}]}]`,
		`[{"role":"user","content":[` + strings.Repeat(`{"type":"text","text":"a"},`, MaxParts) + `{"type":"text"}]}]`,
		`[{"role":"user","content":[` + strings.Repeat(`{"type":"text","text":"a"},`, MaxParts-1) + `5]}]`,
		`[{"role":"assistant","tool_calls":[` + strings.Repeat(`{"id":"c","function":{"name":"f"}},`, MaxToolCalls-1) + `{"id":"c","function":{"name":"f"}}]}]`,
		`[{"role":"assistant","tool_calls":[` + strings.Repeat(`{"id":"c","function":{"name":"f"}},`, MaxToolCalls) + `{}]}]`,
		`[{"role":"assistant","tool_calls":[` + strings.Repeat(`{},`, MaxToolCalls) + `5]}]`,
		`[{"role":"assistant","tool_calls":[` + strings.Repeat(`{},`, MaxToolCalls) + `{}],"tool_calls":[{"id":"c","function":{"name":"f"}}]}]`,
		`[{"role":"user","content":"x","x":` + strings.Repeat(`[`, 9998) + strings.Repeat(`]`, 9998) + `}]`,
		`[{"role":"user","content":"x","x":` + strings.Repeat(`[`, 9999) + strings.Repeat(`]`, 9999) + `}]`,
	} {
		checkMessages(t, []byte(raw))
	}
}

func checkMessages(t *testing.T, raw []byte) {
	t.Helper()
	got, err := readMessages(raw)
	want, werr := decodeMessagesJSON(raw)
	input := fmt.Sprintf("%.200q", raw)
	jsonenctest.Same(t, input, got, err, want, werr)
	if err != nil && err.Error() != werr.Error() {
		t.Fatalf("%s: error %v, encoding/json's %v", input, err, werr)
	}
}

// decodeMessagesJSON is how messages were decoded before readMessages, with encoding/json, kept as its
// reference: in one go, and only when that failed one by one, for the error that names the message.
func decodeMessagesJSON(raw json.RawMessage) ([]Message, error) {
	var ws []*messageWire
	var errs []error // why each message is no message object, when they were decoded one by one
	if json.Unmarshal(raw, &ws) != nil || slices.Contains(ws, nil) {
		var msgs []json.RawMessage
		if err := json.Unmarshal(raw, &msgs); err != nil {
			return nil, domain.Invalid("messages", "must be an array of messages")
		}
		ws, errs = make([]*messageWire, len(msgs)), make([]error, len(msgs))
		for i, m := range msgs {
			ws[i] = new(messageWire)
			errs[i] = strict(m, ws[i])
		}
	}
	if len(ws) == 0 || len(ws) > MaxMessages {
		return nil, domain.Invalid("messages", fmt.Sprintf("must hold 1 to %d messages", MaxMessages))
	}
	out := make([]Message, len(ws))
	total := 0 // the content parts of the messages before
	for i, w := range ws {
		if errs != nil && errs[i] != nil {
			return nil, refusedJSON(i, errs[i])
		}
		if err := messageJSON(w, &out[i], i, total); err != nil {
			return nil, err
		}
		if !out[i].Text {
			total += len(out[i].Content)
		}
	}
	return out, nil
}

// messageJSON decodes messages[i], whose content parts are held to MaxTotalParts with total before them. (A content
// given twice has its parts counted each time it is read by readMessages, which encoding/json cannot tell: no
// input here gives one past the bound.)
func messageJSON(w *messageWire, m *Message, i, total int) error {
	at := func(field string) string { return "messages[" + strconv.Itoa(i) + "]" + field }
	if w.Role == nil || !slices.Contains(roles, *w.Role) {
		return domain.Invalid(at(".role"), "must be one of "+strings.Join(roles, ", "))
	}
	m.Role = *w.Role
	if w.Name != nil {
		m.Name = *w.Name
	}
	if w.ToolCallID != nil {
		m.ToolCallID = *w.ToolCallID
	}
	if m.Role == "tool" && m.ToolCallID == "" {
		return domain.Invalid(at(".tool_call_id"), "is required in a tool message")
	}
	if len(w.ToolCalls) > MaxToolCalls {
		return domain.Invalid(at(".tool_calls"), fmt.Sprintf("must hold at most %d tool calls", MaxToolCalls))
	}
	for i, tc := range w.ToolCalls {
		if tc.ID == "" || tc.Function.Name == "" {
			return domain.Invalid(at(fmt.Sprintf(".tool_calls[%d]", i)), "needs an id and a function name")
		}
		m.ToolCalls = append(m.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	if isNull(w.Content) {
		if m.Role != "assistant" || len(m.ToolCalls) == 0 {
			return domain.Invalid(at(".content"), "is required")
		}
		m.Null = true
		return nil
	}
	var s string
	if json.Unmarshal(w.Content, &s) == nil {
		m.Text, m.Content = true, []Part{{Type: "text", Text: s}}
		return nil
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(w.Content, &parts); err != nil || len(parts) > MaxParts {
		return domain.Invalid(at(".content"), fmt.Sprintf("must be a string or an array of at most %d content parts", MaxParts))
	}
	for j, p := range parts {
		if total+j >= MaxTotalParts {
			return domain.Invalid(at(".content"), fmt.Sprintf("takes the messages past %d content parts in all", MaxTotalParts))
		}
		var pw struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			ImageURL struct {
				URL    string `json:"url"`
				Detail string `json:"detail"`
			} `json:"image_url"`
		}
		pat := func() string { return at(fmt.Sprintf(".content[%d]", j)) }
		if err := json.Unmarshal(p, &pw); err != nil || pw.Type == "" {
			return domain.Invalid(pat(), "must be a content part object with a type")
		}
		part := Part{Type: pw.Type}
		switch pw.Type {
		case "text":
			part.Text = pw.Text
		case "image_url":
			if pw.ImageURL.URL == "" {
				return domain.Invalid(pat()+".image_url.url", "is required")
			}
			part.ImageURL, part.Detail = pw.ImageURL.URL, pw.ImageURL.Detail
		default:
			part.Raw = p
		}
		m.Content = append(m.Content, part)
	}
	return nil
}

// refusedJSON is the refusal of messages[i] that encoding/json did not decode into a message, err: naming the
// member of the wrong type encoding/json named (its path's first part), else the message.
func refusedJSON(i int, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		name, _, _ := strings.Cut(te.Field, ".")
		if _, ok := memberTypes[name]; !ok {
			panic("encoding/json refused a member readMessages does not type: " + te.Field)
		}
		return domain.Invalid("messages["+strconv.Itoa(i)+"]."+name, memberTypes[name])
	}
	return domain.Invalid("messages["+strconv.Itoa(i)+"]", "must be a message object with a role and content")
}

// messageWire is a message as encoding/json decodes one: the reference readMessages is held to.
type messageWire struct {
	Role       *string         `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       *string         `json:"name"`
	ToolCallID *string         `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// strict decodes an object, refusing a non-object.
func strict(raw json.RawMessage, dst any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return fmt.Errorf("not an object")
	}
	return json.Unmarshal(raw, dst)
}
