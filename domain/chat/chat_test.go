package chat_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/domain/preset"
)

func micros(usd string) *domain.Micros {
	m, err := domain.ParseUSD(usd)
	if err != nil {
		panic(err)
	}
	return &m
}

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

func body(t testing.TB, s string) chat.Body {
	t.Helper()
	var b chat.Body
	if err := json.Unmarshal([]byte(s), &b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPresetRef(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, model, slug string
		version         int
		bad             string
	}{
		{in: `{"model":"m"}`, model: "m"},
		{in: `{"model":"@preset/a-b"}`, slug: "a-b"},
		{in: `{"model":"@preset/a-b@12"}`, slug: "a-b", version: 12},
		{in: `{"model":"openai/gpt@preset/x"}`, model: "openai/gpt", slug: "x"},
		{in: `{"model":"m","preset":"x@2"}`, model: "m", slug: "x", version: 2},
		{in: `{"preset":"@preset/x"}`, slug: "x"},
		{in: `{"model":"@preset/x","preset":"x"}`, slug: "x"},
		{in: `{"model":"@preset/x","preset":"y"}`, bad: "preset"},
		{in: `{"model":"@preset/"}`, bad: "model"},
		{in: `{"model":"@preset/x@0"}`, bad: "model"},
		{in: `{"model":"@preset/x@01"}`, bad: "model"},
		{in: `{"model":"@preset/x@v1"}`, bad: "model"},
		{in: `{"preset":7}`, bad: "preset"},
	} {
		b, ref, err := chat.Preset(body(t, tc.in))
		if tc.bad != "" {
			var de *domain.Error
			if !domainErr(err, &de) || de.Meta["field"] != tc.bad {
				t.Errorf("%s: err %v, want one naming %s", tc.in, err, tc.bad)
			}
			continue
		}
		var model string
		_ = json.Unmarshal(b["model"], &model)
		if err != nil || model != tc.model || (ref == nil) != (tc.slug == "") || ref != nil && (ref.Slug != tc.slug || ref.Version != tc.version) {
			t.Errorf("%s: model %q ref %+v err %v", tc.in, model, ref, err)
		}
		if _, ok := b["preset"]; ok && ref != nil {
			t.Errorf("%s: the preset field stayed", tc.in)
		}
	}
}

func domainErr(err error, de **domain.Error) bool {
	e, ok := err.(*domain.Error)
	*de = e
	return ok
}

// maxBody is the bound on a body's bytes that the tests lay requests over presets with (server.max_body_bytes'
// default).
const maxBody = 10 << 20

func TestUnderPreset(t *testing.T) {
	t.Parallel()
	system := "Be terse."
	metadata := map[string]any{"note": "<a&b>"}
	v := &preset.Version{Number: 1, Config: map[string]any{"model": "m", "temperature": 0.2, "max_tokens": 50.0, "metadata": metadata},
		SystemPrompt: &system}
	p := preset.Preset{Slug: "x", Status: preset.Active}
	b, sp, err := body(t, `{"messages":[{"role":"user","content":"hi"}],"temperature":1,"max_tokens":null}`).UnderPreset(p, v, chat.PresetRef{Slug: "x", Field: "model"}, maxBody)
	if err != nil {
		t.Fatal(err)
	}
	r, err := chat.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if r, err = r.WithSystem(sp); err != nil {
		t.Fatal(err)
	}
	if r.Model != "m" || *r.Temperature != 1 || *r.MaxTokens != 50 || len(r.Messages) != 2 || r.Messages[0].Joined() != "Be terse." {
		t.Fatalf("merged: %+v", r)
	}
	// The preset's value goes upstream as the same JSON value, its <, > and & as they are (the bytes counted
	// against the bound on a body, not \u003c's six for one).
	var sent map[string]any
	if err := json.Unmarshal(r.Extra["metadata"], &sent); err != nil || !reflect.DeepEqual(sent, metadata) ||
		string(r.Extra["metadata"]) != `{"note":"<a&b>"}` {
		t.Errorf("the preset's metadata is sent as %s", r.Extra["metadata"])
	}
	for _, s := range []preset.Status{preset.Disabled, preset.Archived} {
		p.Status = s
		if _, _, err := b.UnderPreset(p, v, chat.PresetRef{Slug: "x", Field: "model"}, maxBody); domain.StatusOf(err) != 403 {
			t.Errorf("%s preset: %v", s, err)
		}
	}
}

// TestUnderPresetModels: model and models are one setting: the preset's apply when the request names no model,
// and are left out whole when it names any.
func TestUnderPresetModels(t *testing.T) {
	t.Parallel()
	p := preset.Preset{Slug: "x", Status: preset.Active}
	for _, tc := range []struct {
		name, config, request string
		model                 string
		fallbacks             []string
	}{
		{"the preset's model and list", `{"model":"a","models":["b","c"]}`, `{}`, "a", []string{"b", "c"}},
		{"the preset's list alone", `{"models":["b","c"]}`, `{"model":null}`, "b", []string{"c"}},
		{"the request's model", `{"model":"a","models":["b"]}`, `{"model":"z"}`, "z", nil},
		{"the request's list", `{"model":"a","models":["b"]}`, `{"models":["y","z"]}`, "y", []string{"z"}},
		{"the request's model and list", `{"models":["b"]}`, `{"model":"x","models":["y"]}`, "x", []string{"y"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var config map[string]any
			if err := json.Unmarshal([]byte(tc.config), &config); err != nil {
				t.Fatal(err)
			}
			b := body(t, tc.request)
			b["messages"] = json.RawMessage(`[{"role":"user","content":"hi"}]`)
			merged, _, err := b.UnderPreset(p, &preset.Version{Number: 1, Config: config}, chat.PresetRef{Slug: "x", Field: "preset"}, maxBody)
			if err != nil {
				t.Fatal(err)
			}
			r, err := chat.Parse(merged)
			if err != nil {
				t.Fatal(err)
			}
			if r.Model != tc.model || !slices.Equal(r.Fallbacks, tc.fallbacks) {
				t.Fatalf("model %q, fallbacks %v; want %q, %v", r.Model, r.Fallbacks, tc.model, tc.fallbacks)
			}
		})
	}
}

// TestFieldsInAnotherCase: a field that names one the gateway reads in another case is refused, naming it as sent,
// exactly when encoding/json (what Ollama and many proxies decode with) would read it as that field, or a decoder
// that compares each letter's upper or lower case (.NET's, Java's: max_completıon_tokens), or one that reads a key
// up to its first NUL (C's): it would otherwise go upstream as it came, where such an upstream takes it for the
// gateway's own (the last key wins) and serves another model than the one priced, streams, or takes a limit the
// budget was not reserved for. A field no such upstream would read as one of the gateway's passes on.
func TestFieldsInAnotherCase(t *testing.T) {
	t.Parallel()
	// Every field Parse reads, with a value it takes; "messages" and "model" are in every body.
	read := map[string]string{"model": `"m"`, "models": `["m"]`, "preset": `""`, "provider": `{}`, "route": `"x"`,
		"transforms": `[]`, "session_id": `"s"`, "user": `"u"`, "usage": `{}`, "plugins": `[]`, "trace": `{}`,
		"stream": `true`, "stream_options": `{}`, "messages": `[{"role":"user","content":"hi"}]`, "max_tokens": `5`,
		"max_completion_tokens": `5`, "temperature": `1`, "top_p": `1`, "stop": `"x"`, "seed": `1`, "n": `1`,
		"tools": `[]`, "tool_choice": `"auto"`, "response_format": `{}`}
	for name, value := range read {
		spellings := []string{strings.ToUpper(name), strings.ToUpper(name[:1]) + name[1:], name + "_", "x" + name,
			strings.ReplaceAll(name, "_", "-"), strings.ReplaceAll(name, "s", "ſ"), strings.ReplaceAll(name, "k", "\u212a"),
			strings.ReplaceAll(name, "S", "ſ"), strings.ReplaceAll(name, "i", "ı"), strings.ReplaceAll(name, "i", "İ"),
			name + "\x00", name + "\x00x", strings.ToUpper(name) + "\x00", "\x00" + name}
		for _, key := range spellings {
			quoted, _ := json.Marshal(key)
			raw := `{"model":"m","messages":[{"role":"user","content":"hi"}],` + string(quoted) + `:` + value + `}`
			b := body(t, raw)
			sent := ""
			for k := range b {
				if k != "model" && k != "messages" {
					sent = k
				}
			}
			if sent == "" || sent == name { // the spelling is the name itself
				continue
			}
			// What encoding/json reads as the field: a struct field of that name matches a key in another case.
			field := reflect.StructOf([]reflect.StructField{{Name: "F", Type: reflect.TypeFor[json.RawMessage](),
				Tag: reflect.StructTag(`json:"` + name + `"`)}})
			reads := func(key string) bool {
				v := reflect.New(field)
				quoted, _ := json.Marshal(key)
				if err := json.Unmarshal([]byte(`{`+string(quoted)+`:`+value+`}`), v.Interface()); err != nil {
					t.Fatal(err)
				}
				return v.Elem().Field(0).Len() > 0
			}
			upTo, _, _ := strings.Cut(key, "\x00")
			matched := reads(key) || reads(upTo) || strings.ToUpper(key) == strings.ToUpper(name) ||
				strings.ToLower(key) == name
			r, err := chat.Parse(b)
			var de *domain.Error
			switch {
			case matched && (!errors.As(err, &de) || de.Kind != domain.KindInvalid || de.Meta["field"] != sent ||
				!strings.Contains(err.Error(), `"`+name+`"`)):
				t.Errorf("%q, read as %q by an upstream: %v, want a 400 naming it", sent, name, err)
			case !matched && (err != nil || string(r.Extra[sent]) != value):
				t.Errorf("%q, another field: %v, extra %s; want it passed on", sent, err, r.Extra[sent])
			}
		}
	}
	// Of several, the first in byte order is named, in whatever order they came.
	for range 10 {
		_, err := chat.Parse(body(t, `{"model":"m","messages":[{"role":"user","content":"hi"}],"ſtream":true,"User":"u","MODEL":"x"}`))
		if err == nil || !strings.HasPrefix(err.Error(), "MODEL: ") {
			t.Fatalf("several: %v, want MODEL named", err)
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

// TestMaxTokensBoth: a request with both max_tokens and max_completion_tokens is estimated at the larger, in
// either order: both are passed on to an OpenAI-compatible upstream, which may obey either.
// TestProviderOptionsNumbers: numbers in provider.options are kept as written (a long integer is not rounded to a
// float64) and checked as the other modalities' are: past what a store holds is a 400 naming the number itself.
func TestProviderOptionsNumbers(t *testing.T) {
	for _, tt := range []struct {
		number string
		field  string // of the 400; "" when accepted
	}{
		{`12345678901234567890`, ""},
		{`0.1`, ""},
		{`-1e300`, ""},
		{`1e999`, "provider.options.openai.seed"},
		{`-1e-999999`, "provider.options.openai.seed"},
	} {
		r, err := chat.Parse(body(t, `{"model":"m","messages":[{"role":"user","content":"hi"}],"provider":{"options":{"openai":{"seed":`+tt.number+`}}}}`))
		if tt.field != "" {
			var de *domain.Error
			if !errors.As(err, &de) || de.Kind != domain.KindInvalid || de.Meta["field"] != tt.field {
				t.Errorf("%s: err %v, want a 400 naming %s", tt.number, err, tt.field)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.number, err)
			continue
		}
		if got := r.Options["openai"].(map[string]any)["seed"]; got != json.Number(tt.number) {
			t.Errorf("%s: kept as %#v", tt.number, got)
		}
	}
}

// TestProviderOptionsChoices: an n in provider.options is held to the request's rule (1), under either spelling an
// upstream decoding as encoding/json reads; before, "n":5 there went upstream, past the check of the request's n.
func TestProviderOptionsChoices(t *testing.T) {
	for _, tt := range []struct {
		options string
		field   string // of the 400; "" when accepted
	}{
		{`{"openai":{"n":1}}`, ""},
		{`{"openai":{"seed":5},"groq":{}}`, ""},
		{`{"openai":{"n":5}}`, "provider.options.openai.n"},
		{`{"openai":{"N":2}}`, "provider.options.openai.N"},
		{`{"openai":{"n":1.0}}`, "provider.options.openai.n"},
		{`{"openai":{"n":"1"}}`, "provider.options.openai.n"},
		{`{"openai":{"n":null}}`, "provider.options.openai.n"},
	} {
		_, err := chat.Parse(body(t, `{"model":"m","messages":[{"role":"user","content":"hi"}],"provider":{"options":`+tt.options+`}}`))
		if tt.field == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.options, err)
			}
			continue
		}
		var de *domain.Error
		if !errors.As(err, &de) || de.Kind != domain.KindInvalid || de.Meta["field"] != tt.field {
			t.Errorf("%s: err %v, want a 400 naming %s", tt.options, err, tt.field)
		}
	}
}

func TestMaxTokensBoth(t *testing.T) {
	for _, tt := range []struct {
		fields string
		want   int64
	}{
		{`"max_tokens":100000,"max_completion_tokens":1`, 100000},
		{`"max_completion_tokens":1,"max_tokens":100000`, 100000},
		{`"max_tokens":1,"max_completion_tokens":100000`, 100000},
		{`"max_tokens":7`, 7},
		{`"max_completion_tokens":7,"max_tokens":null`, 7},
	} {
		r, err := chat.Parse(body(t, `{"model":"m","messages":[{"role":"user","content":"hi"}],`+tt.fields+`}`))
		if err != nil || r.MaxTokens == nil || *r.MaxTokens != tt.want {
			t.Errorf("%s: MaxTokens %v, %v; want %d", tt.fields, r.MaxTokens, err, tt.want)
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
	for _, tt := range []struct {
		name, fields, opts string
		fair, prompt       int64
		completion         int64
	}{
		{"no max_tokens: the default", `"messages":[{"role":"user","content":"hi"}]`, ``, 5, 6, chat.DefaultMaxTokens},
		{"max_tokens", `"messages":[{"role":"user","content":"hi"}],"max_tokens":10`, ``, 5, 6, 10},
		{"CJK: a token a byte", `"messages":[{"role":"user","content":"你好你好"}],"max_tokens":10`, ``, 7, 16, 10},
		{"emoji and two messages", `"messages":[{"role":"system","content":"😀"},{"role":"user","content":"😀😀"}],"max_tokens":1`, ``, 11, 20, 1},
		{"options max_completion_tokens past max_tokens", `"messages":[{"role":"user","content":"hi"}],"max_tokens":10`,
			`{"max_completion_tokens":20000}`, 5, 6, 20000},
		{"options max_tokens without max_tokens", `"messages":[{"role":"user","content":"hi"}]`, `{"max_tokens":20000}`, 5, 6, 20000},
		{"options max_tokens as a string", `"messages":[{"role":"user","content":"hi"}]`, `{"max_tokens":"30000"}`, 5, 6, 30000},
		{"options generationConfig.maxOutputTokens", `"messages":[{"role":"user","content":"hi"}]`,
			`{"generationConfig":{"maxOutputTokens":50000}}`, 5, 6, 50000},
		{"options maxOutputTokens", `"messages":[{"role":"user","content":"hi"}]`, `{"maxOutputTokens":60000}`, 5, 6, 60000},
		{"options smaller than the default", `"messages":[{"role":"user","content":"hi"}]`, `{"max_tokens":5}`, 5, 6, chat.DefaultMaxTokens},
		{"options smaller than max_tokens", `"messages":[{"role":"user","content":"hi"}],"max_tokens":900`, `{"max_tokens":5}`, 5, 6, 900},
		{"options not numbers", `"messages":[{"role":"user","content":"hi"}]`, `{"max_tokens":"x","maxOutputTokens":null}`, 5, 6, chat.DefaultMaxTokens},
		{"options huge: saturated", `"messages":[{"role":"user","content":"hi"}]`, `{"max_tokens":1e300}`, 5, 6, 1 << 62},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := chat.Parse(body(t, `{"model":"m",`+tt.fields+`}`))
			if err != nil {
				t.Fatal(err)
			}
			var opts map[string]any
			if tt.opts != "" {
				if err := json.Unmarshal([]byte(tt.opts), &opts); err != nil {
					t.Fatal(err)
				}
			}
			if got := r.PromptTokens(); got != tt.fair {
				t.Errorf("PromptTokens %d, want %d", got, tt.fair)
			}
			if got := r.MaxPromptTokens(); got != tt.prompt {
				t.Errorf("MaxPromptTokens %d, want %d", got, tt.prompt)
			}
			if got := r.MaxCompletionTokens(opts); got != tt.completion {
				t.Errorf("MaxCompletionTokens %d, want %d", got, tt.completion)
			}
			if got, want := r.Estimate(p, opts), chat.Cost(p, tt.prompt, tt.completion); got != want {
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

// TestMessageErrorFields holds each refusal of a message to the field it names, past the first message and part:
// the names are made only when a message is refused.
func TestMessageErrorFields(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		second string // the second message
		field  string
	}{
		{`5`, "messages[1]"},
		{`{"role":"robot","content":"x"}`, "messages[1].role"},
		{`{"role":"tool","content":"x"}`, "messages[1].tool_call_id"},
		{`{"role":"assistant","content":null,"tool_calls":[{"id":"a","function":{"name":"f"}},{"id":"b"}]}`, "messages[1].tool_calls[1]"},
		{`{"role":"user","content":null}`, "messages[1].content"},
		{`{"role":"user","content":5}`, "messages[1].content"},
		{`{"role":"user","content":[{"type":"text","text":"a"},{"text":"b"}]}`, "messages[1].content[1]"},
		{`{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{}}]}`, "messages[1].content[1].image_url.url"},
		{`{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b\u0000"}]}`, "messages[1].content[1].text"},
		{`{"role":"user","content":"\u0000"}`, "messages[1].content[0].text"},
	} {
		_, err := chat.Parse(body(t, `{"model":"m","messages":[{"role":"user","content":"hi"},`+tt.second+`]}`))
		var de *domain.Error
		if !errors.As(err, &de) || de.Kind != domain.KindInvalid || de.Meta["field"] != tt.field {
			t.Errorf("%s: err %v, want a 400 naming %s", tt.second, err, tt.field)
		}
	}
	if _, err := chat.Parse(body(t, `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"user","content":[{"type":"text","text":"b"}]}]}`)); err != nil {
		t.Errorf("a valid request: %v", err)
	}
	// The messages are read in order: a message that is no object is refused after those before it, and a list
	// too long before any of them.
	for _, tt := range []struct{ messages, field string }{
		{`[{"role":"robot","content":"x"},5]`, "messages[0].role"},
		{`[{"role":"user","content":"x"},null,{"role":"robot"}]`, "messages[1]"},
		{`[{"role":5}]`, "messages[0].role"},
		{`[{"role":"assistant","content":null,"tool_calls":[{"id":"a","function":{"name":7}}]}]`, "messages[0].tool_calls"},
		{`{}`, "messages"},
		{`[]`, "messages"},
		{`[5` + strings.Repeat(`,{"role":"user","content":"x"}`, chat.MaxMessages) + `]`, "messages"},
	} {
		_, err := chat.Parse(body(t, `{"model":"m","messages":`+tt.messages+`}`))
		var de *domain.Error
		if !errors.As(err, &de) || de.Kind != domain.KindInvalid || de.Meta["field"] != tt.field {
			t.Errorf("%.40s: err %v, want a 400 naming %s", tt.messages, err, tt.field)
		}
	}
}

// TestRawValuesMustBeUTF8: a value passed on as it came (a field the gateway does not read, tool_choice,
// response_format, a tool's schema, a part of a kind it does not read) that is not UTF-8 is a 400 naming it, not
// bytes an upstream reads as it may; the same bytes in a string the gateway decodes are mended, as encoding/json
// mends them.
func TestRawValuesMustBeUTF8(t *testing.T) {
	t.Parallel()
	const bad = "\xff\xfe"
	for _, tt := range []struct{ fields, field string }{
		{`"metadata":{"k":"` + bad + `"}`, "metadata"},
		{`"tool_choice":{"type":"function","function":{"name":"` + bad + `"}}`, "tool_choice"},
		{`"response_format":{"type":"json_schema","json_schema":{"name":"` + bad + `"}}`, "response_format"},
		{`"tools":[{"type":"function","function":{"name":"f","parameters":{"description":"` + bad + `"}}}]`, "tools[0].function.parameters"},
		{`"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"` + bad + `"}}]}]`, "messages[0].content[0]"},
	} {
		// A json.RawMessage keeps the bytes as they came; the last of two messages fields is the one read.
		_, err := chat.Parse(body(t, `{"model":"m","messages":[{"role":"user","content":"hi"}],`+tt.fields+`}`))
		var de *domain.Error
		if !errors.As(err, &de) || de.Kind != domain.KindInvalid || de.Meta["field"] != tt.field {
			t.Errorf("%s: err %v, want a 400 naming %s", tt.fields, err, tt.field)
		}
	}
	r, err := chat.Parse(body(t, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"name\":\"a"+bad+"\",\"content\":\"hi\"}]}"))
	if err != nil || r.Messages[0].Name != "a\uFFFD\uFFFD" {
		t.Errorf("a decoded name: %q, %v; want it mended", r.Messages[0].Name, err)
	}
}

// TestWithTexts: the texts replace the text parts in order, on a copy; texts that are the request's own (no
// guardrail redacted) give the request as it is, with nothing copied, as each step of a call asks for it.
func TestWithTexts(t *testing.T) {
	r, err := chat.Parse(body(t, `{"model":"m","messages":[{"role":"system","content":"a"},`+
		`{"role":"user","content":[{"type":"text","text":"b"},{"type":"image_url","image_url":{"url":"u"}},{"type":"text","text":"c"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
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
}

// TestParseAllocations guards Parse's allocations for a plain streamed request, on every call's path to its
// first token: the Request it fills, and the variables of the fields a body does not have, stay off the heap (a
// destination passed on as an any to encoding/json took 8 more).
func TestParseAllocations(t *testing.T) {
	b := body(t, `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Hi there"}]}`)
	if n := testing.AllocsPerRun(100, func() {
		if _, err := chat.Parse(b); err != nil {
			t.Fatal(err)
		}
	}); n > 20 {
		t.Fatalf("%v allocations, want at most 20", n)
	}
}

// typicalBody is a chat call as most clients make one: a system and a user message, streamed, with a couple of
// options.
const typicalBody = `{"model":"openai/gpt-4o-mini","stream":true,"temperature":0.7,"max_tokens":256,"messages":[` +
	`{"role":"system","content":"You are a helpful assistant. Answer briefly."},` +
	`{"role":"user","content":"What is the capital of France, and what is it known for?"}]}`

// partsBody has every kind of message and content part the gateway reads.
const partsBody = `{"model":"m","messages":[{"role":"system","content":"Be terse."},{"role":"user","content":[` +
	`{"type":"text","text":"What is in this picture?"},{"type":"image_url","image_url":{"url":"https://example.com/a.png","detail":"low"}}]},` +
	`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"look","arguments":"{\"x\":1}"}}]},` +
	`{"role":"tool","tool_call_id":"call_1","content":"a cat"}]}`

// TestParseTypicalAllocations pins Parse's allocations for a typical body at 11, where encoding/json took 30: its
// messages are read in one pass (jsonenc.Scanner) with an allocation for each message's text, its part and the
// list's growth (6), and its other fields read by the same scanner (the model's string, an int64 and a float64
// for max_tokens and temperature, the map of the fields passed on as they came).
func TestParseTypicalAllocations(t *testing.T) {
	b := body(t, typicalBody)
	if n := testing.AllocsPerRun(100, func() {
		if _, err := chat.Parse(b); err != nil {
			t.Fatal(err)
		}
	}); n > 11 {
		t.Fatalf("%v allocations, want at most 11", n)
	}
}

func BenchmarkParse(b *testing.B) {
	for _, bc := range []struct{ name, body string }{{"typical", typicalBody}, {"parts", partsBody}} {
		b.Run(bc.name, func(b *testing.B) {
			body := body(b, bc.body)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := chat.Parse(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// tinyParts is a body of about 10 MiB (server.max_body_bytes' default) of messages of 1,000 content parts each,
// each as short as a part can be: what the parts cost the gateway to read, past what their bytes do.
var tinyParts = func() string {
	msg := `{"role":"user","content":[` + strings.Repeat(`{"type":"text"},`, chat.MaxParts-1) + `{"type":"text"}]}`
	return `{"model":"m","messages":[` + strings.Repeat(msg+",", 10<<20/len(msg)-1) + msg + `]}`
}()

// TestTinyPartsRefused: a body of 10 MiB of the shortest content parts, 1,000 a message, is refused at the message
// whose parts take the messages past MaxTotalParts, naming its content, having kept no more than MaxTotalParts
// parts: 136 allocations (3 MB), where it was read whole, 7,859 of them (198 MB, 19 times the body; see
// BenchmarkParseTinyParts).
func TestTinyPartsRefused(t *testing.T) {
	b := body(t, tinyParts)
	_, err := chat.Parse(b)
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind != domain.KindInvalid ||
		de.Meta["field"] != fmt.Sprintf("messages[%d].content", chat.MaxTotalParts/chat.MaxParts) {
		t.Fatalf("%v, want a 400 naming messages[%d].content", err, chat.MaxTotalParts/chat.MaxParts)
	}
	if n := testing.AllocsPerRun(3, func() { _, _ = chat.Parse(b) }); n > 200 {
		t.Fatalf("%v allocations, want at most 200", n)
	}
}

// BenchmarkParseTinyParts reports the bytes a parse of tinyParts allocates for each byte of the body
// (alloc-B/body-B): 19 before the messages' parts were bounded in all (MaxTotalParts), 0.29 since.
func BenchmarkParseTinyParts(b *testing.B) {
	body := body(b, tinyParts)
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		_, _ = chat.Parse(body)
	}
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/float64(len(tinyParts)), "alloc-B/body-B")
}

// TestListsAtBounds: each list of a request other than its messages is refused one past its bound, naming the
// field, and a list far past it is refused without decoding its items: the allocations of the refusal do not grow
// with the list (a 10 MiB list of {} tools cost 548 MB before it was refused).
func TestListsAtBounds(t *testing.T) {
	items := func(n int, item string) string { return strings.TrimSuffix(strings.Repeat(item+",", n), ",") }
	const hi = `"messages":[{"role":"user","content":"hi"}]`
	// a tool's parameters may hold a list past domain.MaxListEntries: only the tools are counted
	tool := `{"type":"function","function":{"name":"f","parameters":{"enum":[` + items(domain.MaxListEntries+1, `"v"`) + `]}}}`
	for _, tt := range []struct {
		name string
		body func(n int) string
		max  int
		want string // the message one past the bound
	}{
		{"tools", func(n int) string { return `{"model":"m",` + hi + `,"tools":[` + items(n, tool) + `]}` }, chat.MaxTools,
			"tools: must be an array of at most 512 tools"},
		{"stop", func(n int) string { return `{"model":"m",` + hi + `,"stop":[` + items(n, `"ab"`) + `]}` }, chat.MaxStops,
			"stop: must be a string or an array of at most 4 strings"},
		{"models", func(n int) string { return `{` + hi + `,"models":[` + items(n, `"ab"`) + `]}` }, chat.MaxModels,
			"models: must hold at most 3 models"},
		{"provider.order", func(n int) string { return `{"model":"m",` + hi + `,"provider":{"order":[` + items(n, `"ab"`) + `]}}` },
			chat.MaxRouteProviders, "provider.order: must list at most 256 providers"},
		{"provider.options", func(n int) string {
			return `{"model":"m",` + hi + `,"provider":{"options":{"openai":{"a":[` + items(n, `[]`) + `]}}}}`
		}, domain.MaxListEntries, "provider.options.openai.a: must have at most 1000 entries"},
		{"provider.options nested", func(n int) string {
			return `{"model":"m",` + hi + `,"provider":{"options":{"openai":[` + items(n, `[`+items(999, `1`)+`]`) + `]}}}`
		}, 19, "provider: must have at most 20000 values in all"},
	} {
		if _, err := chat.Parse(body(t, tt.body(tt.max))); err != nil {
			t.Errorf("%s at its bound: %v", tt.name, err)
		}
		past := body(t, tt.body(tt.max+1))
		if _, err := chat.Parse(past); err == nil || err.Error() != tt.want {
			t.Errorf("%s one past its bound: %v, want %s", tt.name, err, tt.want)
		}
		far := body(t, tt.body(tt.max+2000))
		if n := testing.AllocsPerRun(5, func() { _, _ = chat.Parse(far) }); n > 20 {
			t.Errorf("%s 2,000 past its bound: %v allocations, want at most 20", tt.name, n)
		}
	}
}

// TestChoiceIsStringOrObject: tool_choice and response_format are a string or an object, checked without
// decoding them.
func TestChoiceIsStringOrObject(t *testing.T) {
	for _, field := range []string{"tool_choice", "response_format"} {
		for v, ok := range map[string]bool{`"auto"`: true, `{}`: true, ` {"a":[[],{}]} `: true, `null`: true, `5`: false,
			`[]`: false, `true`: false, `[{}]`: false} {
			_, err := chat.Parse(body(t, `{"model":"m","messages":[{"role":"user","content":"hi"}],"`+field+`":`+v+`}`))
			if (err == nil) != ok || err != nil && err.Error() != field+": must be a string or an object" {
				t.Errorf("%s %s: %v", field, v, err)
			}
		}
		big := body(t, `{"model":"m","messages":[{"role":"user","content":"hi"}],"`+field+`":{"a":[`+strings.Repeat(`[],`, 10_000)+`[]]}}`)
		if n := testing.AllocsPerRun(5, func() { _, _ = chat.Parse(big) }); n > 15 {
			t.Errorf("%s of 10,000 lists: %v allocations", field, n)
		}
	}
}

// TestWithSystem holds a preset's system prompt, laid over the parsed request, to what decoding each message into
// a map and laying the prompt before them gave (the reference here): the same messages once parsed; role is read
// as Parse reads it ("Role": tested apart, which the reference does not read). A request Parse refuses is refused
// as the caller sent it, its messages named at their own index, not one further on.
func TestWithSystem(t *testing.T) {
	t.Parallel()
	const system = "Be terse."
	reference := func(b chat.Body) chat.Body {
		out := maps.Clone(b)
		var msgs []map[string]json.RawMessage
		if err := json.Unmarshal(b["messages"], &msgs); err != nil {
			return out
		}
		for _, m := range msgs {
			var role string
			_ = json.Unmarshal(m["role"], &role)
			if role == "system" || role == "developer" {
				return out
			}
		}
		merged := []json.RawMessage{json.RawMessage(`{"role":"system","content":"Be terse."}`)}
		for _, m := range msgs {
			raw, _ := json.Marshal(m)
			merged = append(merged, raw)
		}
		out["messages"], _ = json.Marshal(merged)
		return out
	}
	for _, msgs := range []string{
		`[{"role":"user","content":"hi"}]`, `[{"role":"system","content":"mine"},{"role":"user","content":"hi"}]`,
		`[{"role":"developer","content":"d"}]`, ` [ {"role":"user","content":"hi"} ] `,
		`[{"role":"system","role":"user","content":"x"}]`, `[{"role":"user","content":"x","role":"system"}]`,
		`[{"content":[{"type":"text","text":"a"}],"role":"user","name":"n"}]`,
		`[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"r"}]`,
	} {
		b := body(t, `{"model":"m","messages":`+msgs+`}`)
		own, err := chat.Parse(b)
		if err != nil {
			t.Fatalf("%s: %v", msgs, err)
		}
		got, gerr := own.WithSystem(chat.SystemPrompt{Text: system, MaxBytes: maxBody})
		want, err := chat.Parse(reference(b))
		if err != nil || gerr != nil || !reflect.DeepEqual(got.Messages, want.Messages) || got.Prepended != len(got.Messages)-len(own.Messages) {
			t.Errorf("%s:\n got %+v (%d prepended)\nwant %+v, %v", msgs, got.Messages, got.Prepended, want.Messages, err)
		}
		if r, err := own.WithSystem(chat.SystemPrompt{MaxBytes: maxBody}); err != nil || len(r.Messages) != len(own.Messages) || r.Prepended != 0 {
			t.Errorf("%s: an empty prompt was laid", msgs)
		}
	}
	own, err := chat.Parse(body(t, `{"model":"m","messages":[{"Role":"system","content":"mine"}]}`))
	if r, _ := own.WithSystem(chat.SystemPrompt{Text: system, MaxBytes: maxBody}); err != nil || len(r.Messages) != 1 { // the reference reads "role" only
		t.Errorf(`"Role":"system": %v %+v`, err, r.Messages)
	}

	// Under a preset with a system prompt, the caller's messages[0] is named so, and their last as they sent it.
	p := preset.Preset{Slug: "x", Status: preset.Active}
	prompt := system
	v := &preset.Version{Number: 1, Config: map[string]any{"model": "m"}, SystemPrompt: &prompt}
	ref := chat.PresetRef{Slug: "x", Field: "preset"}
	b, _, err := body(t, `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]}`).UnderPreset(p, v, ref, maxBody)
	var de *domain.Error
	if _, err = chat.Parse(b); !errors.As(err, &de) || de.Meta["field"] != "messages[0].content[0].image_url.url" {
		t.Errorf("the caller's messages[0] refused as %v", err)
	}
	b, sp, _ := body(t, `{"messages":[`+strings.Repeat(`{"role":"user","content":"x"},`, chat.MaxMessages-2)+`{"role":"tool","tool_call_id":"c","content":"x"}]}`).UnderPreset(p, v, ref, maxBody)
	r, err := chat.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if r, err = r.WithSystem(sp); err != nil || len(r.Messages) != chat.MaxMessages || r.Prepended != 1 {
		t.Fatalf("%d messages under a preset: %v, %d messages", chat.MaxMessages-1, err, len(r.Messages))
	}
	if got := r.MessageField(chat.MaxMessages-1, ".tool_call_id"); got != fmt.Sprintf("messages[%d].tool_call_id", chat.MaxMessages-2) {
		t.Errorf("the caller's last message is named %s", got)
	}
}

// TestPresetAndRequestBounds: a request laid over a preset is held to the bounds the caller's own request is:
// MaxFields fields, MaxMessages messages with the preset's system prompt, and the bound on a body's bytes, its
// fields' names and values as they are sent, with the system prompt when it is laid. Past one, it is a 400 naming
// the field that named the preset, which says the preset and the request have more than the bound together and
// gives it in metadata, whichever bound it is; at it, it is taken. The preset's configuration and the request were
// each within the bounds, and together made twice as many fields, or bytes.
func TestPresetAndRequestBounds(t *testing.T) {
	t.Parallel()
	p := preset.Preset{Slug: "x", Status: preset.Active}
	ref := chat.PresetRef{Slug: "x", Field: "model"}
	fields := func(prefix string, n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, `,"%s%d":1`, prefix, i)
		}
		return b.String()
	}
	config := func(prefix string, n int) map[string]any {
		c := map[string]any{"model": "m"}
		for i := range n {
			c[fmt.Sprintf("%s%d", prefix, i)] = 1.0
		}
		return c
	}
	past := func(n int64, unit string) string {
		return fmt.Sprintf(`model: preset "x" and the request have more than %d %s together`, n, unit)
	}
	hi := `"messages":[{"role":"user","content":"hi"}]`
	// A system message of the request's own, and a developer one, under which the preset's prompt is not laid.
	own := `"messages":[{"role":"system","content":"hi"}]`
	dev := `"messages":[{"role":"developer","content":"hi"}]`
	system := strings.Repeat("s", 100)
	// The bytes of hi's field (own's and dev's: one more each), its name and value, of the model's, and of the
	// system prompt.
	his, models, systems := int64(len("messages")+len(`[{"role":"user","content":"hi"}]`)), int64(len("model")+len(`"m"`)),
		int64(len(system))
	// A value of the preset's 1,000 bytes as sent, 999 of them <, & and >, which json.Marshal sent as 5,994.
	html := map[string]any{"model": "m", "a": strings.Repeat("<&>", 333)}
	for _, tc := range []struct {
		name     string
		request  string
		config   map[string]any
		system   string
		maxBytes int64
		want     string // the 400's message, "" when the request is taken
		max      int64  // and the bound it gives in metadata
	}{
		{"fields at the bound", `{` + hi + fields("a", chat.MaxFields/2) + `}`, config("b", chat.MaxFields/2-2), "", maxBody, "", 0},
		{"a field past", `{` + hi + fields("a", chat.MaxFields/2) + `}`, config("b", chat.MaxFields/2-1), "", maxBody,
			past(chat.MaxFields, "fields"), chat.MaxFields},
		{"the request's fields over the preset's count once", `{` + hi + fields("a", chat.MaxFields-2) + `}`,
			config("a", chat.MaxFields-2), "", maxBody, "", 0},
		{"bytes at the bound", `{` + hi + `,"a":"` + strings.Repeat("x", 998) + `"}`, map[string]any{"model": "m"}, system,
			his + 1 + 1000 + models + systems, "", 0},
		{"a byte past", `{` + hi + `,"a":"` + strings.Repeat("x", 998) + `"}`, map[string]any{"model": "m"}, system,
			his + 1 + 1000 + models + systems - 1, past(his+1+1000+models+systems-1, "bytes"), his + 1 + 1000 + models + systems - 1},
		{"the preset's bytes", `{` + hi + `}`, map[string]any{"model": "m", "a": strings.Repeat("x", 998)}, "",
			his + 1 + 1000 + models - 1, past(his+1+1000+models-1, "bytes"), his + 1 + 1000 + models - 1},
		{"the preset's bytes as sent at the bound", `{` + hi + `}`, html, "", his + 1 + 1001 + models, "", 0},
		{"the preset's bytes as sent a byte past", `{` + hi + `}`, html, "", his + 1 + 1001 + models - 1,
			past(his+1+1001+models-1, "bytes"), his + 1 + 1001 + models - 1},
		{"the request's model as sent at the bound", `{` + hi + `,"model":"` + strings.Repeat("<&>", 333) + `@preset/x"}`,
			map[string]any{"model": "m"}, "", his + int64(len("model")) + 1001, "", 0},
		{"the request's model as sent a byte past", `{` + hi + `,"model":"` + strings.Repeat("<&>", 333) + `@preset/x"}`,
			map[string]any{"model": "m"}, "", his + int64(len("model")) + 1000, past(his+int64(len("model"))+1000, "bytes"),
			his + int64(len("model")) + 1000},
		{"a prompt not laid under a system message of the request's", `{` + own + `,"a":"` + strings.Repeat("x", 998) + `"}`,
			map[string]any{"model": "m"}, system, his + 2 + 1 + 1000 + models, "", 0},
		{"a prompt not laid under a developer message", `{` + dev + `,"a":"` + strings.Repeat("x", 998) + `"}`,
			map[string]any{"model": "m"}, system, his + 5 + 1 + 1000 + models, "", 0},
		{"a byte past with a prompt not laid", `{` + own + `,"a":"` + strings.Repeat("x", 998) + `"}`,
			map[string]any{"model": "m"}, system, his + 2 + 1 + 1000 + models - 1, past(his+2+1+1000+models-1, "bytes"),
			his + 2 + 1 + 1000 + models - 1},
		{"messages at the bound", `{"messages":[` + strings.Repeat(`{"role":"user","content":"x"},`, chat.MaxMessages-2) + `{"role":"user","content":"x"}]}`,
			map[string]any{"model": "m"}, system, maxBody, "", 0},
		{"a message past", `{"messages":[` + strings.Repeat(`{"role":"user","content":"x"},`, chat.MaxMessages-1) + `{"role":"user","content":"x"}]}`,
			map[string]any{"model": "m"}, system, maxBody, past(chat.MaxMessages, "messages"), chat.MaxMessages},
		{"a message past with no system prompt", `{"messages":[` + strings.Repeat(`{"role":"user","content":"x"},`, chat.MaxMessages-1) + `{"role":"user","content":"x"}]}`,
			map[string]any{"model": "m"}, "", maxBody, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &preset.Version{Number: 1, Config: tc.config}
			if tc.system != "" {
				v.SystemPrompt = &tc.system
			}
			// The request names the preset as Preset reads it, or not at all (ref names it then).
			b, _, err := chat.Preset(body(t, tc.request))
			if err != nil {
				t.Fatal(err)
			}
			b, sp, err := b.UnderPreset(p, v, ref, tc.maxBytes)
			if err == nil {
				var r chat.Request
				if r, err = chat.Parse(b); err != nil {
					t.Fatal(err)
				}
				_, err = r.WithSystem(sp)
			}
			var de *domain.Error
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (!errors.As(err, &de) || de.Kind != domain.KindInvalid || de.Meta["field"] != "model" || err.Error() != tc.want):
				t.Fatalf("%v, want a 400: %s", err, tc.want)
			case tc.want == "":
				return
			case len(de.Meta) != 2:
				t.Fatalf("metadata %v, want the field and the bound alone", de.Meta)
			}
			for k, bound := range de.Meta {
				if k != "field" && (!strings.HasSuffix(tc.want, strings.TrimPrefix(k, "max_")+" together") || bound != tc.max) {
					t.Errorf("metadata %s: %v, want the bound of %q, %d", k, bound, tc.want, tc.max)
				}
			}
		})
	}
}

// TestStreamOptions: stream_options is read as encoding/json read it into a struct of its include_usage alone
// (the reference here): the same value, and an error exactly when it has one, naming the member when it is the
// member that is not a boolean.
func TestStreamOptions(t *testing.T) {
	for _, tt := range []struct {
		raw   string
		field string // of the error, when there is one
	}{
		{`null`, ""},
		{`{}`, ""},
		{`{"include_usage":true}`, ""},
		{`{"include_usage":false}`, ""},
		{`{"include_usage":null}`, ""},
		{`{"include_usage":true,"include_usage":null}`, ""},
		{`{"include_usage":null,"include_usage":true}`, ""},
		{`{"INCLUDE_USAGE":true}`, ""},
		{`{"include_\u0075sage":true}`, ""},
		{`{"other":[1,{"a":"b"}],"include_usage":true,"more":"x"}`, ""},
		{` { "include_usage" : true } `, ""},
		{`{"include_usage":"yes"}`, "stream_options.include_usage"},
		{`{"include_usage":1}`, "stream_options.include_usage"},
		{`{"include_usage":{}}`, "stream_options.include_usage"},
		{`true`, "stream_options"},
		{`[]`, "stream_options"},
		{`"x"`, "stream_options"},
		{`{"include_usage":true`, "stream_options"},
		{`{"include_usage":true}}`, "stream_options"},
		{`{"include_usage" true}`, "stream_options"},
	} {
		var ref struct {
			IncludeUsage *bool `json:"include_usage"`
		}
		refErr := json.Unmarshal([]byte(tt.raw), &ref)
		b := chat.Body{"model": json.RawMessage(`"m"`), "messages": json.RawMessage(`[{"role":"user","content":"hi"}]`),
			"stream_options": json.RawMessage(tt.raw)}
		r, err := chat.Parse(b)
		if (err != nil) != (refErr != nil) {
			t.Errorf("%s: error %v, encoding/json's %v", tt.raw, err, refErr)
			continue
		}
		var de *domain.Error
		switch {
		case err != nil && (!errors.As(err, &de) || de.Meta["field"] != tt.field):
			t.Errorf("%s: %v, want an error naming %s", tt.raw, err, tt.field)
		case err == nil && r.IncludeUsage != (ref.IncludeUsage != nil && *ref.IncludeUsage):
			t.Errorf("%s: include_usage %v, encoding/json's %v", tt.raw, r.IncludeUsage, ref.IncludeUsage)
		}
	}
}
