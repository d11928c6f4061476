package chatcompletions

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
	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/domain/preset"
	"github.com/switchboard-ai/switchboard/domain/routing"
)

// body decodes s, a chat completions body the test knows to be within the limits, as the HTTP adapter does.
func body(t testing.TB, s string) *Body {
	t.Helper()
	b, err := Decode([]byte(s))
	if err != nil {
		t.Fatalf("%.80s: %v", s, err)
	}
	return b
}

// request decodes s into a request, as the chat use case asks a body for one.
func request(_ testing.TB, s string) (chat.Request, error) {
	b, err := Decode([]byte(s))
	if err != nil {
		return chat.Request{}, err
	}
	return b.Request()
}

// under lays b over a preset's version as the chat use case does (app.Chat): refused when the preset may not be
// used, and with the system prompt to lay once the request is decoded.
func under(b *Body, p preset.Preset, v *preset.Version, ref chat.PresetRef, maxBytes int64) (chat.SystemPrompt, error) {
	if err := ref.Usable(p, v); err != nil {
		return chat.SystemPrompt{}, err
	}
	size, err := b.UnderPreset(v.Config, ref, maxBytes)
	sp := chat.SystemPrompt{Preset: ref, Size: size, MaxBytes: maxBytes}
	if v.SystemPrompt != nil {
		sp.Text = *v.SystemPrompt
	}
	return sp, err
}

// maxBody is the bound on a body's bytes that the tests lay requests over presets with (server.max_body_bytes'
// default).
const maxBody = 10 << 20

// tinyParts is a body of about 10 MiB (server.max_body_bytes' default) of messages of 1,000 content parts each,
// each as short as a part can be: what the parts cost the gateway to read, past what their bytes do.
var tinyParts = func() string {
	msg := `{"role":"user","content":[` + strings.Repeat(`{"type":"text"},`, chat.MaxParts-1) + `{"type":"text"}]}`
	return `{"model":"m","messages":[` + strings.Repeat(msg+",", 10<<20/len(msg)-1) + msg + `]}`
}()

// partsBody has every kind of message and content part the gateway reads.
const partsBody = `{"model":"m","messages":[{"role":"system","content":"Be terse."},{"role":"user","content":[` +
	`{"type":"text","text":"What is in this picture?"},{"type":"image_url","image_url":{"url":"https://example.com/a.png","detail":"low"}}]},` +
	`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"look","arguments":"{\"x\":1}"}}]},` +
	`{"role":"tool","tool_call_id":"call_1","content":"a cat"}]}`

// typicalBody is a chat call as most clients make one: a system and a user message, streamed, with a couple of
// options.
const typicalBody = `{"model":"openai/gpt-4o-mini","stream":true,"temperature":0.7,"max_tokens":256,"messages":[` +
	`{"role":"system","content":"You are a helpful assistant. Answer briefly."},` +
	`{"role":"user","content":"What is the capital of France, and what is it known for?"}]}`

func TestUnderPreset(t *testing.T) {
	t.Parallel()
	system := "Be terse."
	metadata := map[string]any{"note": "<a&b>"}
	v := &preset.Version{Number: 1, Config: map[string]any{"model": "m", "temperature": 0.2, "max_tokens": 50.0, "metadata": metadata},
		SystemPrompt: &system}
	p := preset.Preset{Slug: "x", Status: preset.Active}
	b := body(t, `{"messages":[{"role":"user","content":"hi"}],"temperature":1,"max_tokens":null}`)
	sp, err := under(b, p, v, chat.PresetRef{Slug: "x", Field: "model"}, maxBody)
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.Request()
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
		if _, err := under(b, p, v, chat.PresetRef{Slug: "x", Field: "model"}, maxBody); domain.StatusOf(err) != 403 {
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
			b.fields["messages"] = json.RawMessage(`[{"role":"user","content":"hi"}]`)
			if _, err := under(b, p, &preset.Version{Number: 1, Config: config}, chat.PresetRef{Slug: "x", Field: "preset"}, maxBody); err != nil {
				t.Fatal(err)
			}
			r, err := b.Request()
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
	// Every field the gateway reads, with a value it takes; "messages" and "model" are in every body.
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
			for k := range b.fields {
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
			r, err := b.Request()
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
		_, err := request(t, `{"model":"m","messages":[{"role":"user","content":"hi"}],"ſtream":true,"User":"u","MODEL":"x"}`)
		if err == nil || !strings.HasPrefix(err.Error(), "MODEL: ") {
			t.Fatalf("several: %v, want MODEL named", err)
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
		r, err := request(t, `{"model":"m","messages":[{"role":"user","content":"hi"}],"provider":{"options":{"openai":{"seed":`+tt.number+`}}}}`)
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
		_, err := request(t, `{"model":"m","messages":[{"role":"user","content":"hi"}],"provider":{"options":`+tt.options+`}}`)
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
		r, err := request(t, `{"model":"m","messages":[{"role":"user","content":"hi"}],`+tt.fields+`}`)
		if err != nil || r.MaxTokens == nil || *r.MaxTokens != tt.want {
			t.Errorf("%s: MaxTokens %v, %v; want %d", tt.fields, r.MaxTokens, err, tt.want)
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
		_, err := request(t, `{"model":"m","messages":[{"role":"user","content":"hi"},`+tt.second+`]}`)
		var de *domain.Error
		if !errors.As(err, &de) || de.Kind != domain.KindInvalid || de.Meta["field"] != tt.field {
			t.Errorf("%s: err %v, want a 400 naming %s", tt.second, err, tt.field)
		}
	}
	if _, err := request(t, `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"user","content":[{"type":"text","text":"b"}]}]}`); err != nil {
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
		_, err := request(t, `{"model":"m","messages":`+tt.messages+`}`)
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
		_, err := request(t, `{"model":"m","messages":[{"role":"user","content":"hi"}],`+tt.fields+`}`)
		var de *domain.Error
		if !errors.As(err, &de) || de.Kind != domain.KindInvalid || de.Meta["field"] != tt.field {
			t.Errorf("%s: err %v, want a 400 naming %s", tt.fields, err, tt.field)
		}
	}
	r, err := request(t, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"name\":\"a"+bad+"\",\"content\":\"hi\"}]}")
	if err != nil || r.Messages[0].Name != "a\uFFFD\uFFFD" {
		t.Errorf("a decoded name: %q, %v; want it mended", r.Messages[0].Name, err)
	}
}

// promptBody is a call with a long prompt: 64 KiB of a user message's text.
var promptBody = `{"model":"openai/gpt-4o-mini","stream":true,"messages":[{"role":"system","content":"You are a helpful assistant."},` +
	`{"role":"user","content":"` + strings.Repeat("The quick brown fox jumps over the lazy dog. ", 64<<10/45) + `"}]}`

// decodeRequest decodes a body into its request, as a call does: what BenchmarkDecode times.
func decodeRequest(raw []byte) (chat.Request, error) {
	b, err := Decode(raw)
	if err != nil {
		return chat.Request{}, err
	}
	return b.Request()
}

// TestDecodeAllocations guards what decoding a typical body into its request allocates, on every call's path to
// its first token: encoding/json's decoding of the fields into a map, of each field, of the messages and of each
// content. (The decoder written by hand on jsonenc.Scanner it replaced took 15 allocations; BenchmarkDecode.)
func TestDecodeAllocations(t *testing.T) {
	raw := []byte(typicalBody)
	if n := testing.AllocsPerRun(100, func() {
		if _, err := decodeRequest(raw); err != nil {
			t.Fatal(err)
		}
	}); n > 56 {
		t.Fatalf("%v allocations, want at most 56", n)
	}
}

// BenchmarkDecode times a body's way to its request (Decode, then Request): a typical one, one with every kind of
// message and part, and one with a prompt of 64 KiB.
func BenchmarkDecode(b *testing.B) {
	for _, bc := range []struct{ name, body string }{{"typical", typicalBody}, {"parts", partsBody}, {"prompt64k", promptBody}} {
		b.Run(bc.name, func(b *testing.B) {
			raw := []byte(bc.body)
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decodeRequest(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestTinyPartsRefused: a body of 10 MiB of the shortest content parts, 1,000 a message, is refused at the message
// whose parts take the messages past MaxTotalParts, naming its content, before any of it is decoded (a handful of
// allocations): decoded whole, it allocated 198 MB, 19 times the body (BenchmarkDecodeTinyParts).
func TestTinyPartsRefused(t *testing.T) {
	raw := []byte(tinyParts)
	_, err := Decode(raw)
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind != domain.KindInvalid || de.Meta["max_parts"] != chat.MaxTotalParts ||
		de.Meta["field"] != fmt.Sprintf("messages[%d].content", chat.MaxTotalParts/chat.MaxParts) {
		t.Fatalf("%v, want a 400 naming messages[%d].content", err, chat.MaxTotalParts/chat.MaxParts)
	}
	if n := testing.AllocsPerRun(3, func() { _, _ = Decode(raw) }); n > 15 {
		t.Fatalf("%v allocations, want at most 15", n)
	}
}

// BenchmarkDecodeTinyParts reports the bytes decoding tinyParts allocates for each byte of the body
// (alloc-B/body-B): 19 before the messages' parts were bounded in all (MaxTotalParts), 0.29 when they were
// counted as the messages were read, none now that they are counted before.
func BenchmarkDecodeTinyParts(b *testing.B) {
	raw := []byte(tinyParts)
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		_, _ = Decode(raw)
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
			routing.MaxProviders, "provider.order: must list at most 256 providers"},
		{"provider.options", func(n int) string {
			return `{"model":"m",` + hi + `,"provider":{"options":{"openai":{"a":[` + items(n, `[]`) + `]}}}}`
		}, domain.MaxListEntries, "provider.options.openai.a: must have at most 1000 entries"},
		{"provider.options nested", func(n int) string {
			return `{"model":"m",` + hi + `,"provider":{"options":{"openai":[` + items(n, `[`+items(999, `1`)+`]`) + `]}}}`
		}, 19, "provider: must have at most 20000 values in all"},
	} {
		if _, err := request(t, tt.body(tt.max)); err != nil {
			t.Errorf("%s at its bound: %v", tt.name, err)
		}
		if _, err := request(t, tt.body(tt.max+1)); err == nil || err.Error() != tt.want {
			t.Errorf("%s one past its bound: %v, want %s", tt.name, err, tt.want)
		}
		far := []byte(tt.body(tt.max + 2000))
		if n := testing.AllocsPerRun(5, func() { _, _ = Decode(far) }); n > 15 {
			t.Errorf("%s 2,000 past its bound: %v allocations, want at most 15", tt.name, n)
		}
	}
}

// TestChoiceIsStringOrObject: tool_choice and response_format are a string or an object, checked without
// decoding them: decoding an object into an any (a map or a slice for every {} and [] within) made a 10 MiB
// tool_choice cost 500 MB.
func TestChoiceIsStringOrObject(t *testing.T) {
	for _, field := range []string{"tool_choice", "response_format"} {
		for v, ok := range map[string]bool{`"auto"`: true, `{}`: true, ` {"a":[[],{}]} `: true, `null`: true, `5`: false,
			`[]`: false, `true`: false, `[{}]`: false} {
			_, err := request(t, `{"model":"m","messages":[{"role":"user","content":"hi"}],"`+field+`":`+v+`}`)
			if (err == nil) != ok || err != nil && err.Error() != field+": must be a string or an object" {
				t.Errorf("%s %s: %v", field, v, err)
			}
		}
		// kept as it came: what it costs does not grow with what it holds
		small := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"` + field + `":{"a":[]}}`)
		big := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"` + field + `":{"a":[` + strings.Repeat(`[],`, 10_000) + `[]]}}`)
		if n, m := testing.AllocsPerRun(5, func() { _, _ = decodeRequest(big) }), testing.AllocsPerRun(5, func() { _, _ = decodeRequest(small) }); n > m {
			t.Errorf("%s of 10,000 lists: %v allocations, of none %v", field, n, m)
		}
	}
}

// TestWithSystem holds a preset's system prompt, laid over the decoded request, to what decoding each message into
// a map and laying the prompt before them gave (the reference here): the same messages once decoded; role is read
// as a message's wire type reads it ("Role": tested apart, which the reference does not read). A request refused
// is refused as the caller sent it, its messages named at their own index, not one further on.
func TestWithSystem(t *testing.T) {
	t.Parallel()
	const system = "Be terse."
	reference := func(b *Body) *Body {
		out := &Body{fields: maps.Clone(b.fields)}
		var msgs []map[string]json.RawMessage
		if err := json.Unmarshal(b.fields["messages"], &msgs); err != nil {
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
		out.fields["messages"], _ = json.Marshal(merged)
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
		own, err := b.Request()
		if err != nil {
			t.Fatalf("%s: %v", msgs, err)
		}
		got, gerr := own.WithSystem(chat.SystemPrompt{Text: system, MaxBytes: maxBody})
		want, err := reference(b).Request()
		if err != nil || gerr != nil || !reflect.DeepEqual(got.Messages, want.Messages) || got.Prepended != len(got.Messages)-len(own.Messages) {
			t.Errorf("%s:\n got %+v (%d prepended)\nwant %+v, %v", msgs, got.Messages, got.Prepended, want.Messages, err)
		}
		if r, err := own.WithSystem(chat.SystemPrompt{MaxBytes: maxBody}); err != nil || len(r.Messages) != len(own.Messages) || r.Prepended != 0 {
			t.Errorf("%s: an empty prompt was laid", msgs)
		}
	}
	own, err := request(t, `{"model":"m","messages":[{"Role":"system","content":"mine"}]}`)
	if r, _ := own.WithSystem(chat.SystemPrompt{Text: system, MaxBytes: maxBody}); err != nil || len(r.Messages) != 1 { // the reference reads "role" only
		t.Errorf(`"Role":"system": %v %+v`, err, r.Messages)
	}

	// Under a preset with a system prompt, the caller's messages[0] is named so, and their last as they sent it.
	p := preset.Preset{Slug: "x", Status: preset.Active}
	prompt := system
	v := &preset.Version{Number: 1, Config: map[string]any{"model": "m"}, SystemPrompt: &prompt}
	ref := chat.PresetRef{Slug: "x", Field: "preset"}
	b := body(t, `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]}`)
	if _, err := under(b, p, v, ref, maxBody); err != nil {
		t.Fatal(err)
	}
	var de *domain.Error
	if _, err = b.Request(); !errors.As(err, &de) || de.Meta["field"] != "messages[0].content[0].image_url.url" {
		t.Errorf("the caller's messages[0] refused as %v", err)
	}
	b = body(t, `{"messages":[`+strings.Repeat(`{"role":"user","content":"x"},`, chat.MaxMessages-2)+`{"role":"tool","tool_call_id":"c","content":"x"}]}`)
	sp, err := under(b, p, v, ref, maxBody)
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.Request()
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
			b := body(t, tc.request)
			if _, err := b.Preset(); err != nil {
				t.Fatal(err)
			}
			sp, err := under(b, p, v, ref, tc.maxBytes)
			if err == nil {
				var r chat.Request
				if r, err = b.Request(); err != nil {
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

// streamOptionsSeeds are stream_options values as clients send them and as they should not: keys in another case,
// given twice or escaped, null, values of other types, and what is no JSON value.
var streamOptionsSeeds = []string{`null`, `{}`, `{"include_usage":true}`, `{"include_usage":false}`, `{"include_usage":null}`,
	`{"include_usage":true,"include_usage":null}`, `{"include_usage":null,"include_usage":true}`, `{"INCLUDE_USAGE":true}`,
	`{"include_\u0075sage":true}`, "{\"include_u\u017fage\":true}", `{"other":[1,{"a":"b"}],"include_usage":true,"more":"x"}`,
	` { "include_usage" : true } `, `{"include_usage":"yes"}`, `{"include_usage":1}`, `{"include_usage":{}}`, `true`, `[]`,
	`"x"`, `{"include_usage":true`, `{"include_usage":true}}`, `{"include_usage" true}`, `{"a":1,}`, "{\"\xff\":true}"}

// TestStreamOptions: stream_options is read as encoding/json reads it into a struct of its include_usage alone:
// the same value, and a 400 exactly when that has an error, naming the member when it is the member that is not a
// boolean; a value that is no JSON makes the body none.
func TestStreamOptions(t *testing.T) {
	for _, raw := range streamOptionsSeeds {
		checkStreamOptions(t, []byte(raw))
	}
}

// FuzzStreamOptions is TestStreamOptions for any value.
func FuzzStreamOptions(f *testing.F) {
	for _, raw := range streamOptionsSeeds {
		f.Add([]byte(raw))
	}
	f.Fuzz(checkStreamOptions)
}

func checkStreamOptions(t *testing.T, raw []byte) {
	t.Helper()
	r, err := request(t, `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream_options":`+string(raw)+`}`)
	var de *domain.Error
	if !json.Valid(raw) { // no value: the body is malformed, or one of other fields (1,"x":2)
		if err != nil && domain.KindOf(err) != domain.KindInvalid {
			t.Fatalf("%q: %v", raw, err)
		}
		return
	}
	var ref struct {
		IncludeUsage *bool `json:"include_usage"`
	}
	refErr := json.Unmarshal(raw, &ref)
	field := "stream_options"
	var te *json.UnmarshalTypeError
	if errors.As(refErr, &te) && te.Field == "include_usage" {
		field = "stream_options.include_usage"
	}
	switch {
	case (err != nil) != (refErr != nil):
		t.Fatalf("%q: error %v, encoding/json's %v", raw, err, refErr)
	case err != nil && (!errors.As(err, &de) || de.Meta["field"] != field):
		t.Fatalf("%q: %v, want an error naming %s", raw, err, field)
	case err == nil && r.IncludeUsage != (ref.IncludeUsage != nil && *ref.IncludeUsage):
		t.Fatalf("%q: include_usage %v, encoding/json's %v", raw, r.IncludeUsage, ref.IncludeUsage)
	}
}

// TestPartsCarryText: a part of a kind the gateway does not read is passed on as it came, with the text it carries
// for the guardrails (a misspelt text part's, a file's name, not its encoded data, an assistant's refusal); a text
// or image part carries none beside its own.
func TestPartsCarryText(t *testing.T) {
	t.Parallel()
	r, err := request(t, `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},
		{"type":"txt","text":"Falcon"},{"type":"file","file":{"filename":"f.txt","file_data":"data:text/plain;base64,QQ=="}},
		{"type":"image_url","image_url":{"url":"https://x/i.png"}}]},
		{"role":"assistant","content":[{"type":"refusal","refusal":"Osprey"}]}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.Texts(), "|"); got != "a|Falcon|filename\nf.txt\nfile_data|Osprey" {
		t.Errorf("texts %q", got)
	}
	if p := r.Messages[0].Content[1]; p.Type != "txt" || string(p.Raw) != `{"type":"txt","text":"Falcon"}` {
		t.Errorf("the misspelt part %+v, want it as it came", p)
	}
}
