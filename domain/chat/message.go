package chat

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/switchboard-ai/switchboard/domain"
)

// Message is one message of the conversation.
type Message struct {
	// Role is system, developer, user, assistant or tool.
	Role string
	// Content is the message's parts; a plain string content is one text part (and Text says so).
	Content []Part
	// Text means the content was a plain string; Null that it was null or absent (an assistant's tool calls).
	Text, Null bool
	Name       string
	ToolCalls  []ToolCall
	ToolCallID string
}

// Part is one part of a message's content.
type Part struct {
	// Type is text, image_url, or another kind, passed as it came (Raw) to an upstream of the caller's format.
	Type string
	// Text is a text part's text; of a part of another kind, the text it carries (a document's, a search result's),
	// which the guardrails scan but cannot rewrite (Fixed).
	Text     string
	ImageURL string
	Detail   string
	Raw      domain.Opaque
	// CacheControl is a text part's prompt-caching marker as the caller sent it (Anthropic's cache_control, which
	// OpenRouter's chat completions take too): sent to upstreams that cache on it, dropped for the others.
	CacheControl domain.Opaque
}

// ToolCall is a function call the assistant asked for.
type ToolCall struct {
	ID, Name, Arguments string
}

// roles are those a message may have.
var roles = []string{"system", "developer", "user", "assistant", "tool"}

// CheckMessages holds the messages to the rules, in order: 1 to MaxMessages of them (or none beside items aside,
// which an upstream of the request's format alone is sent), each as checkMessage says,
// and their content parts together at most MaxTotalParts. A wire format that decodes the messages one by one and
// meets one it cannot decode asks this of those before it, so that the first message refused is the one named.
func (r Request) CheckMessages() error {
	if len(r.Messages) == 0 && len(r.Aside) == 0 || len(r.Messages) > MaxMessages {
		return TooManyMessages("messages")
	}
	return r.CheckMessagesBefore(len(r.Messages))
}

// CheckMessagesBefore holds the first n messages to the rules, as CheckMessages does all of them, but for their
// number: the ones a wire format decoded before one it could not.
func (r Request) CheckMessagesBefore(n int) error {
	parts := 0 // the content parts of the messages before
	for i, m := range r.Messages[:n] {
		if err := r.checkMessage(i, m, &parts); err != nil {
			return err
		}
	}
	return nil
}

// checkMessage holds Messages[i] to the rules: a role, a tool message's call id, its tool calls' ids and names, a
// content unless it is an assistant's tool calls, its parts each with a type (an image its URL) and within the
// bounds (parts counts those of the messages before, and adds its own), and its text one that a database can store
// (no NUL, UTF-8). The names of its fields are only made for an error, as most calls have none.
func (r Request) checkMessage(i int, m Message, parts *int) error {
	if !slices.Contains(roles, m.Role) {
		return domain.Invalid(r.MessageField(i, ".role"), "must be one of "+strings.Join(roles, ", "))
	}
	if m.Role == "tool" && m.ToolCallID == "" {
		return domain.Invalid(r.MessageField(i, ".tool_call_id"), "is required in a tool message")
	}
	if len(m.ToolCalls) > MaxToolCalls {
		return TooManyToolCalls(r.MessageField(i, ".tool_calls"))
	}
	for k, tc := range m.ToolCalls {
		if tc.ID == "" || tc.Name == "" {
			return domain.Invalid(r.MessageField(i, fmt.Sprintf(".tool_calls[%d]", k)), "needs an id and a function name")
		}
	}
	if m.Null && (m.Role != "assistant" || len(m.ToolCalls) == 0) {
		return domain.Invalid(r.MessageField(i, ".content"), "is required")
	}
	if len(m.Content) > MaxParts {
		return BadContent(r.MessageField(i, ".content"))
	}
	if !m.Text {
		if *parts += len(m.Content); *parts > MaxTotalParts {
			return TooManyParts(r.MessageField(i, ".content"))
		}
	}
	for j, p := range m.Content {
		switch p.Type {
		case "":
			return domain.Invalid(r.PartField(i, j, ""), "must be a content part object with a type")
		case "text":
			if !domain.Storable(p.Text) { // the field's name is only made for the error
				return domain.CheckText(r.PartField(i, j, ".text"), p.Text)
			}
		case "image_url":
			if p.ImageURL == "" {
				return domain.Invalid(r.PartField(i, j, ".image_url.url"), "is required")
			}
		default:
			if err := domain.CheckOpaque(r.PartField(i, j, ""), p.Raw); err != nil {
				return err
			}
		}
	}
	return nil
}

// MessageField names field of Messages[i] as the caller sent it: messages[i-Prepended], with field appended.
func (r Request) MessageField(i int, field string) string {
	return "messages[" + strconv.Itoa(i-r.Prepended) + "]" + field
}

// PartField names field of part j of Messages[i] as the caller sent it.
func (r Request) PartField(i, j int, field string) string {
	return r.MessageField(i, ".content["+strconv.Itoa(j)+"]"+field)
}

// Texts are what the guardrails' content filters scan: the messages' text parts, in order, then the texts of the
// items aside, then the texts the messages' parts of other kinds carry (a document's), the last Fixed of them.
func (r Request) Texts() []string {
	var out []string
	for _, m := range r.Messages {
		for _, p := range m.Content {
			if p.Type == "text" {
				out = append(out, p.Text)
			}
		}
	}
	for _, a := range r.Aside {
		if a.Text != "" {
			out = append(out, a.Text)
		}
	}
	for _, m := range r.Messages {
		for _, p := range m.Content {
			if p.carries() {
				out = append(out, p.Text)
			}
		}
	}
	return out
}

// Fixed is how many of Texts, the last ones, a guardrail cannot rewrite: the texts parts of other kinds carry,
// which go upstream as they came (a redaction in one refuses the call).
func (r Request) Fixed() int {
	n := 0
	for _, m := range r.Messages {
		for _, p := range m.Content {
			if p.carries() {
				n++
			}
		}
	}
	return n
}

// carries reports a part of another kind than text that carries text.
func (p Part) carries() bool { return p.Type != "text" && p.Text != "" }

// WithTexts returns the request with its texts replaced, in the order Texts lists them (redacted): its text parts'
// and its items' aside (not the Fixed ones). A call asks for it at each step (the record's input, the estimate, the
// upstream's request, the usage): when texts are the request's own, as they are unless a guardrail redacted, the
// request is returned as it is, with no copy of its messages and their parts. A redacted request goes upstream as
// its messages, without the items aside, whose texts would go as they came.
func (r Request) WithTexts(texts []string) Request {
	if r.hasTexts(texts) {
		return r
	}
	msgs := make([]Message, len(r.Messages))
	i := 0
	for mi, m := range r.Messages {
		m.Content = slices.Clone(m.Content)
		for pi := range m.Content {
			if m.Content[pi].Type == "text" && i < len(texts) {
				m.Content[pi].Text = texts[i]
				i++
			}
		}
		msgs[mi] = m
	}
	r.Messages, r.Rewritten, r.Redacted, r.Aside = msgs, true, true, nil
	return r
}

// hasTexts reports whether WithTexts(texts) would replace no text with another.
func (r Request) hasTexts(texts []string) bool {
	i := 0
	same := func(text string) bool {
		if i == len(texts) {
			return true
		}
		i++
		return texts[i-1] == text
	}
	for _, m := range r.Messages {
		for _, p := range m.Content {
			if p.Type == "text" && !same(p.Text) {
				return false
			}
		}
	}
	for _, a := range r.Aside {
		if a.Text != "" && !same(a.Text) {
			return false
		}
	}
	return true
}

// Joined is a message's text parts, one after another.
func (m Message) Joined() string {
	if len(m.Content) == 1 && m.Content[0].Type == "text" { // a string content: no copy
		return m.Content[0].Text
	}
	var b strings.Builder
	for _, p := range m.Content {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// Translatable is content without the parts an upstream that does not speak the request's format cannot take:
// those of a kind the gateway does not read (kept as they came, Raw) in a format other than ChatCompletions, whose
// parts OpenAI-compatible upstreams take as they came (a Messages thinking or document block). They are dropped on
// purpose, never sent to be refused. content is returned as it is when it holds none.
func (r Request) Translatable(content []Part) []Part {
	if r.Format == ChatCompletions || r.Format == "" {
		return content
	}
	foreign := func(p Part) bool { return p.Type != "text" && p.Type != "image_url" }
	if !slices.ContainsFunc(content, foreign) {
		return content
	}
	return slices.DeleteFunc(slices.Clone(content), foreign)
}
