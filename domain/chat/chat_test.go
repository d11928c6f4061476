package chat_test

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/domain/preset"
	"github.com/switchboard-ai/switchboard/domain/routing"
)

func micros(usd string) *domain.Micros {
	m, err := domain.ParseUSD(usd)
	if err != nil {
		panic(err)
	}
	return &m
}

// number is a free-form number as an adapter keeps one (domain.Number): as written.
type number string

func (n number) String() string { return string(n) }

func (n number) Float64() (float64, error) { return strconv.ParseFloat(string(n), 64) }

// text is a message whose content is a string.
func text(role, s string) chat.Message {
	return chat.Message{Role: role, Content: []chat.Part{{Type: "text", Text: s}}, Text: true}
}

// parts is a message of content parts.
func parts(role string, ps ...chat.Part) chat.Message {
	return chat.Message{Role: role, Content: ps}
}

// hi is the request every case of a rule starts from: one the rules take.
func hi() chat.Request { return chat.Request{Model: "m", Messages: []chat.Message{text("user", "hi")}} }

func ptr[T any](v T) *T { return &v }

func TestCost(t *testing.T) {
	t.Parallel()
	p := catalog.Pricing{PerMillionPromptTokens: micros("0.15"), PerMillionCompletionTokens: micros("0.6")}
	for _, tc := range []struct {
		prompt, completion int64
		want               domain.Micros
	}{
		{0, 0, 0},
		{1_000_000, 0, 150_000},
		{0, 1_000_000, 600_000},
		{3, 1, 1},                // 0.45 + 0.6 = 1.05 µ$ → 1
		{4, 2, 2},                // 0.6 + 1.2 = 1.8 → 2: rounded once, not per price (1 + 1)
		{10, 0, 2},               // 1.5 → 2, half away from zero
		{1_234_567, 89, 185_238}, // 185185.05 + 53.4 = 185238.45
	} {
		if got := chat.Cost(p, tc.prompt, tc.completion); got != tc.want {
			t.Errorf("Cost(%d, %d) = %d, want %d", tc.prompt, tc.completion, got, tc.want)
		}
	}
	if got := chat.Cost(catalog.Pricing{}, 1e9, 1e9); got != 0 {
		t.Errorf("no prices: %d", got)
	}
}

func TestPresetOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		model, named string
		own, slug    string
		version      int
		field        string // of the reference, or of the 400
		bad          bool
	}{
		{model: "m", own: "m"},
		{model: "@preset/a-b", slug: "a-b", field: "model"},
		{model: "@preset/a-b@12", slug: "a-b", version: 12, field: "model"},
		{model: "openai/gpt@preset/x", own: "openai/gpt", slug: "x", field: "model"},
		{model: "m", named: "x@2", own: "m", slug: "x", version: 2, field: "preset"},
		{named: "@preset/x", slug: "x", field: "preset"},
		{model: "@preset/x", named: "x", slug: "x", field: "preset"},
		{model: "@preset/x", named: "y", field: "preset", bad: true},
		{model: "@preset/", field: "model", bad: true},
		{model: "@preset/x@0", field: "model", bad: true},
		{model: "@preset/x@01", field: "model", bad: true},
		{model: "@preset/x@v1", field: "model", bad: true},
		{named: "X", field: "preset", bad: true},
	} {
		own, ref, err := chat.PresetOf(tc.model, tc.named)
		if tc.bad {
			var de *domain.Error
			if !errors.As(err, &de) || de.Meta["field"] != tc.field {
				t.Errorf("%q %q: err %v, want a 400 naming %s", tc.model, tc.named, err, tc.field)
			}
			continue
		}
		if err != nil || own != tc.own || (ref == nil) != (tc.slug == "") ||
			ref != nil && (ref.Slug != tc.slug || ref.Version != tc.version || ref.Field != tc.field) {
			t.Errorf("%q %q: model %q ref %+v err %v", tc.model, tc.named, own, ref, err)
		}
	}
}

// TestUsable: a preset that is not active, or has no version to lay, is refused naming the field that named it.
func TestUsable(t *testing.T) {
	t.Parallel()
	ref := chat.PresetRef{Slug: "x", Field: "model"}
	v := &preset.Version{Number: 1}
	for _, tc := range []struct {
		p      preset.Preset
		v      *preset.Version
		status int
	}{
		{preset.Preset{Slug: "x", Status: preset.Active}, v, 0},
		{preset.Preset{Slug: "x", Status: preset.Disabled}, v, 403},
		{preset.Preset{Slug: "x", Status: preset.Archived}, v, 403},
		{preset.Preset{Slug: "x", Status: preset.Active}, nil, 400},
	} {
		err := ref.Usable(tc.p, tc.v)
		var de *domain.Error
		switch {
		case tc.status == 0 && err != nil:
			t.Errorf("%s, version %v: %v", tc.p.Status, tc.v, err)
		case tc.status != 0 && (domain.StatusOf(err) != tc.status || !errors.As(err, &de) || de.Meta["field"] != "model"):
			t.Errorf("%s, version %v: %v, want a %d naming model", tc.p.Status, tc.v, err, tc.status)
		}
	}
}

// TestValidate holds each rule of a decoded request to the field it names, past the first message and part: the
// names are made only when a message is refused.
func TestValidate(t *testing.T) {
	t.Parallel()
	many := func(n int, m chat.Message) []chat.Message {
		out := make([]chat.Message, n)
		for i := range out {
			out[i] = m
		}
		return out
	}
	tenParts := parts("user", slices.Repeat([]chat.Part{{Type: "text", Text: "a"}}, chat.MaxParts)...)
	for _, tc := range []struct {
		name  string
		edit  func(r *chat.Request)
		field string // "" when taken
		msg   string // a part of the message, when it matters
	}{
		{"taken", func(r *chat.Request) {}, "", ""},
		{"no model", func(r *chat.Request) { r.Model = "" }, "model", "is required (or models)"},
		{"models make the model", func(r *chat.Request) { r.Model, r.Models = "", []string{"a", "b"} }, "", ""},
		{"too many models", func(r *chat.Request) { r.Models = []string{"a", "b", "c", "d"} }, "models", "at most 3"},
		{"an empty model in the list", func(r *chat.Request) { r.Models = []string{"a", ""} }, "models[1]", "model id"},
		{"a model with a NUL", func(r *chat.Request) { r.Models = []string{"a\x00"} }, "models[0]", ""},
		{"the model with a NUL", func(r *chat.Request) { r.Model = "m\x00" }, "model", ""},
		{"no messages", func(r *chat.Request) { r.Messages = nil }, "messages", "1 to 10000"},
		{"too many messages", func(r *chat.Request) { r.Messages = many(chat.MaxMessages+1, text("user", "x")) }, "messages", ""},
		{"as many as may be", func(r *chat.Request) { r.Messages = many(chat.MaxMessages, text("user", "x")) }, "", ""},
		{"a role", func(r *chat.Request) { r.Messages = append(r.Messages, text("robot", "x")) }, "messages[1].role", ""},
		{"no role", func(r *chat.Request) { r.Messages = append(r.Messages, text("", "x")) }, "messages[1].role", ""},
		{"a tool message's call", func(r *chat.Request) { r.Messages = append(r.Messages, text("tool", "x")) }, "messages[1].tool_call_id", ""},
		{"a tool call without a name", func(r *chat.Request) {
			r.Messages = append(r.Messages, chat.Message{Role: "assistant", Null: true,
				ToolCalls: []chat.ToolCall{{ID: "a", Name: "f"}, {ID: "b"}}})
		}, "messages[1].tool_calls[1]", "needs an id and a function name"},
		{"too many tool calls", func(r *chat.Request) {
			r.Messages = append(r.Messages, chat.Message{Role: "assistant", Null: true,
				ToolCalls: slices.Repeat([]chat.ToolCall{{ID: "a", Name: "f"}}, chat.MaxToolCalls+1)})
		}, "messages[1].tool_calls", "at most 1000"},
		{"an assistant's tool calls with no content", func(r *chat.Request) {
			r.Messages = append(r.Messages, chat.Message{Role: "assistant", Null: true, ToolCalls: []chat.ToolCall{{ID: "a", Name: "f"}}})
		}, "", ""},
		{"no content", func(r *chat.Request) { r.Messages = append(r.Messages, chat.Message{Role: "user", Null: true}) },
			"messages[1].content", "is required"},
		{"too many parts", func(r *chat.Request) {
			r.Messages = append(r.Messages, parts("user", slices.Repeat([]chat.Part{{Type: "text"}}, chat.MaxParts+1)...))
		}, "messages[1].content", "at most 1000 content parts"},
		{"the parts of all the messages", func(r *chat.Request) {
			r.Messages = append(many(chat.MaxTotalParts/chat.MaxParts, tenParts), parts("user", chat.Part{Type: "text"}))
		}, fmt.Sprintf("messages[%d].content", chat.MaxTotalParts/chat.MaxParts), "past 10000 content parts in all"},
		{"a part without a type", func(r *chat.Request) {
			r.Messages = append(r.Messages, parts("user", chat.Part{Type: "text"}, chat.Part{}))
		}, "messages[1].content[1]", "with a type"},
		{"an image without its URL", func(r *chat.Request) {
			r.Messages = append(r.Messages, parts("user", chat.Part{Type: "text"}, chat.Part{Type: "image_url"}))
		}, "messages[1].content[1].image_url.url", "is required"},
		{"a text with a NUL", func(r *chat.Request) { r.Messages = append(r.Messages, text("user", "a\x00")) },
			"messages[1].content[0].text", ""},
		{"a text not UTF-8", func(r *chat.Request) { r.Messages = append(r.Messages, text("user", "a\xff")) },
			"messages[1].content[0].text", ""},
		{"a part passed on, not UTF-8", func(r *chat.Request) {
			r.Messages = append(r.Messages, parts("user", chat.Part{Type: "input_audio", Raw: domain.Opaque("{\"a\":\"\xff\"}")}))
		}, "messages[1].content[0]", "valid UTF-8"},
		{"temperature", func(r *chat.Request) { r.Temperature = ptr(2.5) }, "temperature", "from 0 to 2"},
		{"top_p", func(r *chat.Request) { r.TopP = ptr(-0.1) }, "top_p", "from 0 to 1"},
		{"stop", func(r *chat.Request) { r.Stop = []string{"a", "b", "c", "d", "e"} }, "stop", "at most 4"},
		{"n", func(r *chat.Request) { r.Choices = ptr(int64(2)) }, "n", "must be 1"},
		{"n of 1", func(r *chat.Request) { r.Choices = ptr(int64(1)) }, "", ""},
		{"too many tools", func(r *chat.Request) { r.Tools = make([]chat.Tool, chat.MaxTools+1) }, "tools", "at most 512"},
		{"a user with a NUL", func(r *chat.Request) { r.User = "u\x00" }, "user", ""},
		{"a long session id", func(r *chat.Request) { r.SessionID = strings.Repeat("s", domain.MaxCallerID+1) }, "session_id", ""},
		{"an option's number past a store's", func(r *chat.Request) {
			r.Options = map[string]any{"openai": map[string]any{"seed": number("1e999")}}
		}, "provider.options.openai.seed", ""},
		{"n in the options", func(r *chat.Request) { r.Options = map[string]any{"openai": map[string]any{"n": number("5")}} },
			"provider.options.openai.n", "must be 1"},
		{"N in the options", func(r *chat.Request) { r.Options = map[string]any{"openai": map[string]any{"N": number("2")}} },
			"provider.options.openai.N", "must be 1"},
		{"n in the options as 1.0", func(r *chat.Request) { r.Options = map[string]any{"openai": map[string]any{"n": number("1.0")}} },
			"provider.options.openai.n", ""},
		{"n in the options as a string", func(r *chat.Request) { r.Options = map[string]any{"openai": map[string]any{"n": "1"}} },
			"provider.options.openai.n", ""},
		{"n of 1 in the options", func(r *chat.Request) { r.Options = map[string]any{"openai": map[string]any{"n": number("1")}} }, "", ""},
		{"a route too long", func(r *chat.Request) { r.Route.Order = make([]string, routing.MaxProviders+1) },
			"provider.order", "at most 256"},
		{"a provider with a NUL", func(r *chat.Request) { r.Route.Ignore = []string{"a\x00"} }, "provider.ignore[0]", ""},
	} {
		r := hi()
		tc.edit(&r)
		err := r.Validate()
		var de *domain.Error
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.field != "" && (!errors.As(err, &de) || de.Kind != domain.KindInvalid || de.Meta["field"] != tc.field ||
			!strings.Contains(de.Msg, tc.msg)):
			t.Errorf("%s: %v, want a 400 naming %s (%s)", tc.name, err, tc.field, tc.msg)
		}
	}
	// The parts of all the messages past MaxTotalParts give the bound.
	r := hi()
	r.Messages = append(slices.Repeat([]chat.Message{tenParts}, chat.MaxTotalParts/chat.MaxParts), parts("user", chat.Part{Type: "text"}))
	var de *domain.Error
	if err := r.Validate(); !errors.As(err, &de) || de.Meta["max_parts"] != chat.MaxTotalParts {
		t.Errorf("past the parts in all: %v (%v)", err, de)
	}
}

// TestModels: the models list gives the model when the request names none, and the fallbacks, in order, without
// the model and repeats.
func TestModels(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		model     string
		models    []string
		want      string
		fallbacks []string
	}{
		{"m", nil, "m", nil},
		{"", []string{"a", "b", "a"}, "a", []string{"b"}},
		{"b", []string{"a", "b", "c"}, "b", []string{"a", "c"}},
	} {
		r := chat.Request{Model: tc.model, Models: tc.models, Messages: []chat.Message{text("user", "hi")}}
		if err := r.Validate(); err != nil || r.Model != tc.want || !slices.Equal(r.Fallbacks, tc.fallbacks) {
			t.Errorf("%q %v: model %q fallbacks %v, %v; want %q %v", tc.model, tc.models, r.Model, r.Fallbacks, err, tc.want, tc.fallbacks)
		}
	}
}

// TestCheckMaxTokens: a completion limit the request sets is a positive integer, named as the wire format names
// it.
func TestCheckMaxTokens(t *testing.T) {
	for n, ok := range map[int64]bool{1: true, 4096: true, 0: false, -1: false} {
		err := chat.CheckMaxTokens("max_completion_tokens", n)
		var de *domain.Error
		if ok != (err == nil) || !ok && (!errors.As(err, &de) || de.Meta["field"] != "max_completion_tokens") {
			t.Errorf("%d: %v", n, err)
		}
	}
}

// TestUsageFromUpstream: a usage block no upstream could mean (a negative count, a count past MaxTokenCount, the
// largest context window, or a prompt and completion past it together) is not taken: the answer is then priced as
// one without usage (estimated from what was delivered), never credited for a negative cost nor charged for
// billions of tokens no call could use.
func TestUsageFromUpstream(t *testing.T) {
	const huge = 9_000_000_000_000_000_000
	for _, tt := range []struct {
		name string
		u    chat.Usage
		ok   bool
	}{
		{"counts", chat.Usage{PromptTokens: 7, CompletionTokens: 3, ReasoningTokens: 1, CachedTokens: 2}, true},
		{"zero", chat.Usage{}, true},
		{"at the bound", chat.Usage{PromptTokens: chat.MaxTokenCount, ReasoningTokens: chat.MaxTokenCount, CachedTokens: chat.MaxTokenCount}, true},
		{"together at the bound", chat.Usage{PromptTokens: chat.MaxTokenCount - 3, CompletionTokens: 3}, true},
		{"together past the bound", chat.Usage{PromptTokens: chat.MaxTokenCount - 2, CompletionTokens: 3}, false},
		{"a billion", chat.Usage{PromptTokens: 7, CompletionTokens: 1_000_000_000}, false},
		{"a trillion", chat.Usage{PromptTokens: 1_000_000_000_000}, false},
		{"negative prompt", chat.Usage{PromptTokens: -1_000_000_000_000, CompletionTokens: 5}, false},
		{"negative completion", chat.Usage{PromptTokens: 5, CompletionTokens: -5}, false},
		{"negative reasoning", chat.Usage{PromptTokens: 5, ReasoningTokens: -1}, false},
		{"negative cached", chat.Usage{PromptTokens: 5, CachedTokens: -1}, false},
		{"past the bound", chat.Usage{PromptTokens: chat.MaxTokenCount + 1}, false},
		{"huge", chat.Usage{PromptTokens: huge, CompletionTokens: huge}, false},
	} {
		var r chat.Result
		u := tt.u
		r.Add(chat.Chunk{Content: "ok", Usage: &u})
		if got := r.Usage != nil; got != tt.ok {
			t.Errorf("%s: usage taken %v, want %v", tt.name, got, tt.ok)
		} else if got && *r.Usage != tt.u {
			t.Errorf("%s: usage %+v, want %+v", tt.name, *r.Usage, tt.u)
		}
	}
}

// TestEstimate: a call's budget is reserved for its prompt at a token a byte (a byte-level tokenizer's worst,
// CJK or emoji) plus 4 a message, and for the largest completion limit that reaches the upstream: the request's
// max_tokens, else DefaultMaxTokens (which the adapters send), or a larger one in provider.options. The billing
// fallback, PromptTokens, stays at four bytes a token. At $1 a million tokens, micro-dollars are tokens.
func TestEstimate(t *testing.T) {
	one := micros("1")
	p := catalog.Pricing{PerMillionPromptTokens: one, PerMillionCompletionTokens: one}
	hi := []chat.Message{text("user", "hi")}
	for _, tt := range []struct {
		name         string
		msgs         []chat.Message
		maxTokens    *int64
		opts         map[string]any
		fair, prompt int64
		completion   int64
	}{
		{"no max_tokens: the default", hi, nil, nil, 5, 6, chat.DefaultMaxTokens},
		{"max_tokens", hi, ptr(int64(10)), nil, 5, 6, 10},
		{"CJK: a token a byte", []chat.Message{text("user", "你好你好")}, ptr(int64(10)), nil, 7, 16, 10},
		{"emoji and two messages", []chat.Message{text("system", "😀"), text("user", "😀😀")}, ptr(int64(1)), nil, 11, 20, 1},
		// The options' text (keys and strings) goes upstream too: the prompt counts it (TestPromptCountsWhatGoesUpstream).
		{"options max_completion_tokens past max_tokens", hi, ptr(int64(10)),
			map[string]any{"max_completion_tokens": number("20000")}, 5 + 6, 6 + 21, 20000},
		{"options max_tokens without max_tokens", hi, nil, map[string]any{"max_tokens": number("20000")}, 5 + 3, 6 + 10, 20000},
		{"options max_tokens as a string", hi, nil, map[string]any{"max_tokens": "30000"}, 5 + 3 + 2, 6 + 10 + 5, 30000},
		{"options max_tokens as a float64", hi, nil, map[string]any{"max_tokens": 40000.0}, 5 + 3, 6 + 10, 40000},
		{"options generationConfig.maxOutputTokens", hi, nil,
			map[string]any{"generationConfig": map[string]any{"maxOutputTokens": number("50000")}}, 5 + 4 + 4, 6 + 16 + 15, 50000},
		{"options maxOutputTokens", hi, nil, map[string]any{"maxOutputTokens": number("60000")}, 5 + 4, 6 + 15, 60000},
		{"options smaller than the default", hi, nil, map[string]any{"max_tokens": number("5")}, 5 + 3, 6 + 10, chat.DefaultMaxTokens},
		{"options smaller than max_tokens", hi, ptr(int64(900)), map[string]any{"max_tokens": number("5")}, 5 + 3, 6 + 10, 900},
		{"options not numbers", hi, nil, map[string]any{"max_tokens": "x", "maxOutputTokens": nil}, 5 + 3 + 1 + 4, 6 + 10 + 1 + 15,
			chat.DefaultMaxTokens},
		{"options huge: saturated", hi, nil, map[string]any{"max_tokens": number("1e300")}, 5 + 3, 6 + 10, 1 << 62},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := chat.Request{Model: "m", Messages: tt.msgs, MaxTokens: tt.maxTokens}
			if got := r.PromptTokens(tt.opts); got != tt.fair {
				t.Errorf("PromptTokens %d, want %d", got, tt.fair)
			}
			if got := r.MaxPromptTokens(tt.opts); got != tt.prompt {
				t.Errorf("MaxPromptTokens %d, want %d", got, tt.prompt)
			}
			if got := r.MaxCompletionTokens(tt.opts); got != tt.completion {
				t.Errorf("MaxCompletionTokens %d, want %d", got, tt.completion)
			}
			if got, want := r.Estimate(p, tt.opts), chat.Cost(p, tt.prompt, tt.completion); got != want {
				t.Errorf("Estimate %d, want %d", got, want)
			}
		})
	}
}

// TestToolCallIndexes: an answer's tool calls are gathered in the order their indexes first appear, whatever the
// upstream numbered them: from 0 (OpenAI), past 0 or with gaps (a proxy numbering content blocks), negative or
// huge (an upstream's bug). A negative index panicked the call, a huge one grew the list to it (2^40 entries),
// and a gap answered empty tool calls.
func TestToolCallIndexes(t *testing.T) {
	call := func(id, name, args string) chat.ToolCall { return chat.ToolCall{ID: id, Name: name, Arguments: args} }
	for _, tt := range []struct {
		name   string
		deltas []chat.ToolCallDelta
		want   []chat.ToolCall
	}{
		{"dense", []chat.ToolCallDelta{{Index: 0, ID: "a", Name: "f"}, {Index: 1, ID: "b", Name: "g"}, {Index: 0, Arguments: "{}"}},
			[]chat.ToolCall{call("a", "f", "{}"), call("b", "g", "")}},
		{"from 1", []chat.ToolCallDelta{{Index: 1, ID: "a", Name: "f"}, {Index: 1, Arguments: `{"x":1}`}},
			[]chat.ToolCall{call("a", "f", `{"x":1}`)}},
		{"gaps", []chat.ToolCallDelta{{Index: 2, ID: "a", Name: "f"}, {Index: 5, ID: "b", Name: "g"}, {Index: 2, Arguments: "1"}},
			[]chat.ToolCall{call("a", "f", "1"), call("b", "g", "")}},
		{"negative", []chat.ToolCallDelta{{Index: -1, ID: "a", Name: "f"}, {Index: -1, Arguments: "{}"}},
			[]chat.ToolCall{call("a", "f", "{}")}},
		{"huge", []chat.ToolCallDelta{{Index: 1 << 40, ID: "a", Name: "f"}, {Index: 0, ID: "b", Name: "g"}},
			[]chat.ToolCall{call("a", "f", ""), call("b", "g", "")}},
	} {
		var r chat.Result
		for _, d := range tt.deltas {
			r.Add(chat.Chunk{ToolCalls: []chat.ToolCallDelta{d}})
		}
		if !slices.Equal(r.ToolCalls, tt.want) {
			t.Errorf("%s: tool calls %+v, want %+v", tt.name, r.ToolCalls, tt.want)
		}
	}
}

// TestWithTexts: the texts replace the text parts in order, on a copy; texts that are the request's own (no
// guardrail redacted) give the request as it is, with nothing copied, as each step of a call asks for it.
func TestWithTexts(t *testing.T) {
	r := chat.Request{Model: "m", Messages: []chat.Message{text("system", "a"),
		parts("user", chat.Part{Type: "text", Text: "b"}, chat.Part{Type: "image_url", ImageURL: "u"}, chat.Part{Type: "text", Text: "c"})}}
	texts := func(r chat.Request) string { return strings.Join(r.Texts(), ",") }
	for _, tc := range []struct {
		name  string
		texts []string
		want  string
	}{
		{"its own", []string{"a", "b", "c"}, "a,b,c"},
		{"equal copies", []string{strings.Clone("a"), "b", "c"}, "a,b,c"},
		{"one redacted", []string{"a", "[REDACTED]", "c"}, "a,[REDACTED],c"},
		{"fewer: the rest kept", []string{"x"}, "x,b,c"},
		{"none", nil, "a,b,c"},
		{"more: the rest ignored", []string{"a", "b", "c", "d"}, "a,b,c"},
	} {
		got := r.WithTexts(tc.texts)
		if texts(got) != tc.want {
			t.Errorf("%s: texts %q, want %q", tc.name, texts(got), tc.want)
		}
		if texts(r) != "a,b,c" {
			t.Fatalf("%s: the request's own texts became %q", tc.name, texts(r))
		}
		if got.Messages[1].Content[1].ImageURL != "u" {
			t.Errorf("%s: the image part became %+v", tc.name, got.Messages[1].Content[1])
		}
	}
	own := r.Texts()
	if n := testing.AllocsPerRun(10, func() { _ = r.WithTexts(own) }); n != 0 {
		t.Errorf("WithTexts of the request's own texts: %v allocations, want 0", n)
	}

	// A part of another kind carries its text for the guardrails, after the text parts' and the items' aside: the
	// Fixed ones, which go as they came whatever texts say of them.
	doc := chat.Request{Messages: []chat.Message{parts("user",
		chat.Part{Type: "document", Raw: domain.Opaque(`{"type":"document","source":{"data":"b"}}`), Text: "b"},
		chat.Part{Type: "text", Text: "a"}, chat.Part{Type: "image_url", ImageURL: "u", Raw: domain.Opaque(`{"type":"image"}`)})}}
	if got := texts(doc); got != "a,b" || doc.Fixed() != 1 {
		t.Fatalf("texts with a document %q, %d fixed", got, doc.Fixed())
	}
	if got := doc.WithTexts([]string{"x", "b"}).Messages[0].Content; got[1].Text != "x" || got[0].Type != "document" || got[0].Text != "b" {
		t.Errorf("the text part redacted: %+v", got)
	}
	if got := doc.WithTexts([]string{"a", "[EMAIL]"}); got.Redacted || got.Messages[0].Content[0].Text != "b" {
		t.Errorf("a fixed text changed: %+v, want the request as it is", got)
	}

	// The texts of the items aside follow the messages'. One redacted, the request goes as its messages alone: the
	// items aside would go upstream as they came.
	r.Aside = []chat.Aside{{Raw: domain.Opaque(`{"type":"custom_tool_call_output","output":"d"}`), Text: "d"},
		{Raw: domain.Opaque(`{"type":"reasoning","encrypted_content":"x"}`)}}
	if got := texts(r); got != "a,b,c,d" {
		t.Fatalf("texts with an item aside %q", got)
	}
	for _, tc := range []struct {
		name           string
		texts          []string
		want           string
		redacted, kept bool
	}{
		{"its own", []string{"a", "b", "c", "d"}, "a,b,c,d", false, true},
		{"a message's redacted", []string{"x", "b", "c", "d"}, "x,b,c", true, false},
		{"the item's redacted", []string{"a", "b", "c", "[REDACTED]"}, "a,b,c", true, false},
		{"the messages' only", []string{"a", "b", "c"}, "a,b,c,d", false, true},
	} {
		got := r.WithTexts(tc.texts)
		if texts(got) != tc.want || got.Redacted != tc.redacted || (len(got.Aside) == 2) != tc.kept {
			t.Errorf("%s: texts %q, redacted %v, aside %d, want %q, %v, kept %v", tc.name, texts(got), got.Redacted,
				len(got.Aside), tc.want, tc.redacted, tc.kept)
		}
	}
}

// maxBody is the bound on a body's bytes that the tests lay requests over presets with (server.max_body_bytes'
// default).
const maxBody = 10 << 20

// TestWithSystem: a preset's system prompt is laid before the messages unless it is empty or the request has a
// system or developer message of its own; laid, it shifts the names of the caller's messages back to where the
// caller sent them, and holds the request with it to MaxMessages and to the bound on a body's bytes, naming the
// field that named the preset.
func TestWithSystem(t *testing.T) {
	t.Parallel()
	const system = "Be terse."
	ref := chat.PresetRef{Slug: "x", Field: "preset"}
	for _, tc := range []struct {
		name string
		msgs []chat.Message
		laid bool
	}{
		{"a user message", []chat.Message{text("user", "hi")}, true},
		{"a system message of its own", []chat.Message{text("system", "mine"), text("user", "hi")}, false},
		{"a developer message", []chat.Message{text("developer", "d")}, false},
		{"a tool round", []chat.Message{{Role: "assistant", Null: true, ToolCalls: []chat.ToolCall{{ID: "c", Name: "f"}}},
			{Role: "tool", ToolCallID: "c", Content: []chat.Part{{Type: "text", Text: "r"}}, Text: true}}, true},
	} {
		r := chat.Request{Model: "m", Messages: tc.msgs}
		got, err := r.WithSystem(chat.SystemPrompt{Text: system, Preset: ref, MaxBytes: maxBody})
		want := tc.msgs
		if tc.laid {
			want = append([]chat.Message{text("system", system)}, tc.msgs...)
		}
		if err != nil || !slices.EqualFunc(got.Messages, want, func(a, b chat.Message) bool { return fmt.Sprint(a) == fmt.Sprint(b) }) ||
			got.Prepended != len(want)-len(tc.msgs) {
			t.Errorf("%s: %+v (%d prepended), %v; want %+v", tc.name, got.Messages, got.Prepended, err, want)
		}
		if got, err := r.WithSystem(chat.SystemPrompt{Preset: ref, MaxBytes: maxBody}); err != nil || got.Prepended != 0 {
			t.Errorf("%s: an empty prompt was laid", tc.name)
		}
	}
	// Laid, the caller's last message is named as they sent it, and the bounds hold with the prompt.
	r := chat.Request{Model: "m", Messages: slices.Repeat([]chat.Message{text("user", "x")}, chat.MaxMessages-1)}
	got, err := r.WithSystem(chat.SystemPrompt{Text: system, Preset: ref, MaxBytes: maxBody})
	if err != nil || len(got.Messages) != chat.MaxMessages || got.Prepended != 1 {
		t.Fatalf("%d messages under a preset: %v, %d messages", chat.MaxMessages-1, err, len(got.Messages))
	}
	if f := got.MessageField(chat.MaxMessages-1, ".tool_call_id"); f != fmt.Sprintf("messages[%d].tool_call_id", chat.MaxMessages-2) {
		t.Errorf("the caller's last message is named %s", f)
	}
	for _, tc := range []struct {
		name string
		r    chat.Request
		s    chat.SystemPrompt
		want string
	}{
		{"a message past", chat.Request{Messages: slices.Repeat([]chat.Message{text("user", "x")}, chat.MaxMessages)},
			chat.SystemPrompt{Text: system, Preset: ref, MaxBytes: maxBody}, `preset: preset "x" and the request have more than 10000 messages together`},
		{"a byte past", hi(), chat.SystemPrompt{Text: system, Preset: ref, Size: 100, MaxBytes: 100 + int64(len(system)) - 1},
			fmt.Sprintf(`preset: preset "x" and the request have more than %d bytes together`, 100+len(system)-1)},
	} {
		_, err := tc.r.WithSystem(tc.s)
		var de *domain.Error
		if !errors.As(err, &de) || de.Meta["field"] != "preset" || err.Error() != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
		}
	}
	if _, err := hi().WithSystem(chat.SystemPrompt{Text: system, Preset: ref, Size: 100, MaxBytes: 100 + int64(len(system))}); err != nil {
		t.Errorf("at the bound on bytes: %v", err)
	}
}
