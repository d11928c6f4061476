package chatcompletions

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/switchboard-ai/switchboard/adapters/internal/jsonenc/jsonenctest"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/domain/routing"
)

// TestPreset: the preset a body names, by its model or its preset field, and the body without the reference.
func TestPreset(t *testing.T) {
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
		{in: `{"model":["m"]}`, bad: "model"},
	} {
		b := body(t, tc.in)
		ref, err := b.Preset()
		if tc.bad != "" {
			var de *domain.Error
			if !errors.As(err, &de) || de.Meta["field"] != tc.bad {
				t.Errorf("%s: err %v, want one naming %s", tc.in, err, tc.bad)
			}
			continue
		}
		var model string
		_ = json.Unmarshal(b.fields["model"], &model)
		if err != nil || model != tc.model || (ref == nil) != (tc.slug == "") || ref != nil && (ref.Slug != tc.slug || ref.Version != tc.version) {
			t.Errorf("%s: model %q ref %+v err %v", tc.in, model, ref, err)
		}
		if _, ok := b.fields["preset"]; ok && ref != nil {
			t.Errorf("%s: the preset field stayed", tc.in)
		}
	}
}

// TestRouteFromBody: the provider object's routing preferences reach the route in each of the shapes the
// reference takes them, and one that is not what it should be is a 400 naming its field.
func TestRouteFromBody(t *testing.T) {
	t.Parallel()
	usd := func(s string) *domain.Micros {
		m, _ := domain.ParseUSD(s)
		return &m
	}
	num := func(v float64) *float64 { return &v }
	no := false
	for provider, want := range map[string]routing.Preferences{
		`{}`: {},
		`{"order":["c","A"],"only":["b"],"ignore":["d"]}`: {Order: []string{"c", "A"}, Only: []string{"b"}, Ignore: []string{"d"}},
		`{"ORDER":["b"],"allow_fallbacks":false}`:         {Order: []string{"b"}, AllowFallbacks: &no},
		`{"sort":"price","options":{"a":{"k":1}}}`:        {Sort: routing.ByPrice},
		`{"sort":{"by":"latency","partition":"none"}}`:    {Sort: routing.ByLatency},
		`{"sort":null,"require_parameters":true}`:         {RequireParameters: true},
		`{"max_price":{"prompt":1,"completion":"2.5","request":0,"image":"0.1"}}`: {MaxPrice: routing.MaxPrice{Prompt: usd("1"),
			Completion: usd("2.5")}},
		`{"preferred_max_latency":2,"preferred_min_throughput":{"p50":10,"p90":5.5,"p99":null}}`: {
			PreferredMaxLatency: routing.Percentiles{P50: num(2)}, PreferredMinThroughput: routing.Percentiles{P50: num(10), P90: num(5.5)}},
		`{"data_collection":"deny","zdr":true,"quantizations":["fp8"]}`: {},
	} {
		r, err := request(t, `{"model":"m","messages":[{"role":"user","content":"x"}],"provider":`+provider+`}`)
		if err != nil {
			t.Fatalf("%s: %v", provider, err)
		}
		if !reflect.DeepEqual(r.Route, want) {
			t.Errorf("%s: %+v, want %+v", provider, r.Route, want)
		}
	}
	for bad, field := range map[string]string{`{"order":"a"}`: "provider.order", `{"allow_fallbacks":"no"}`: "provider.allow_fallbacks",
		`{"only":[1]}`: "provider.only", `{"ignore":["a\u0000"]}`: "provider.ignore[0]", `5`: "provider", `{"options":"x"}`: "provider",
		`{"options":{"openai":{"seed":1e999}}}`: "provider.options.openai.seed", `{"sort":"cheap"}`: "provider.sort",
		`{"sort":{"by":"price","partition":"x"}}`: "provider.sort.partition", `{"sort":1}`: "provider.sort",
		`{"max_price":{"prompt":-1}}`: "provider.max_price.prompt", `{"max_price":{"completion":"x"}}`: "provider.max_price.completion",
		`{"max_price":{"audio":true}}`: "provider.max_price.audio", `{"max_price":[]}`: "provider.max_price",
		`{"max_price":{"prompt":0.0000001}}`: "provider.max_price.prompt", `{"preferred_max_latency":-1}`: "provider.preferred_max_latency",
		`{"preferred_max_latency":"x"}`: "provider.preferred_max_latency", `{"preferred_min_throughput":{"p75":1e999}}`: "provider.preferred_min_throughput.p75",
		`{"require_parameters":1}`: "provider.require_parameters"} {
		_, err := request(t, `{"model":"m","messages":[{"role":"user","content":"x"}],"provider":`+bad+`}`)
		var de *domain.Error
		if !errors.As(err, &de) || de.Meta["field"] != field {
			t.Errorf("%s: %v, want a 400 naming %s", bad, err, field)
		}
	}
}

// TestKeyGivenTwice: a body's field given twice is the last, as encoding/json decodes an object into a map, and
// as an upstream that reads the body whole reads it too; within a message, a member given twice decodes into what
// the first set, as encoding/json decodes into a struct (the gateway writes the messages anew).
func TestKeyGivenTwice(t *testing.T) {
	t.Parallel()
	r, err := request(t, `{"model":"a","model":"b","messages":[{"role":"user","content":"x"}],"messages":[{"role":"user","content":"y"}],`+
		`"metadata":{"k":1},"metadata":{"k":2}}`)
	if err != nil || r.Model != "b" || len(r.Messages) != 1 || r.Messages[0].Joined() != "y" || string(r.Extra["metadata"]) != `{"k":2}` {
		t.Fatalf("%+v, %v", r, err)
	}
	r, err = request(t, `{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"a","function":{"name":"f"}},`+
		`{"id":"b","function":{"name":"g"}}],"tool_calls":[{"id":"c"}]}]}`)
	if err != nil || len(r.Messages[0].ToolCalls) != 1 || r.Messages[0].ToolCalls[0] != (chat.ToolCall{ID: "c", Name: "f"}) {
		t.Fatalf("a message's tool calls given twice: %+v, %v", r.Messages, err)
	}
	r, err = request(t, `{"model":"m","messages":[{"role":"user","content":"a","content":[{"type":"text","text":"b"}]}]}`)
	if err != nil || r.Messages[0].Text || r.Messages[0].Joined() != "b" {
		t.Fatalf("a content given twice: %+v, %v", r.Messages, err)
	}
}

// TestCheckConfig: a chat preset's configuration is checked as a call's fields would be, naming the field no call
// could use, beside a stand-in message and model.
func TestCheckConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		config map[string]any
		field  string
	}{
		{map[string]any{"temperature": 0.5, "max_tokens": 100.0, "models": []any{"a", "b"}, "metadata": map[string]any{"x": "<y>"}}, ""},
		{map[string]any{}, ""},
		{map[string]any{"max_tokens": "x"}, "max_tokens"},
		{map[string]any{"models": []any{"a", "b", "c", "d"}}, "models"},
		{map[string]any{"temperature": 3.0}, "temperature"},
		{map[string]any{"MODEL": "x"}, "MODEL"},
		{map[string]any{"provider": map[string]any{"order": "a"}}, "provider.order"},
	} {
		err := CheckConfig(tc.config)
		var de *domain.Error
		if tc.field == "" && err != nil || tc.field != "" && (!errors.As(err, &de) || de.Meta["field"] != tc.field) {
			t.Errorf("%v: %v, want a 400 naming %q", tc.config, err, tc.field)
		}
	}
}

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
	"[{\"role\":\"user\",\"content\":[{\"type\":\"x\",\"y\":\"a\xc3\"}]}]",
	`[{"role":"user","content":"a","content":[{"type":"text","text":"b"}]}]`,
	`[{"role":"user","content":5,"content":"fine"}]`,
	`[{"role":"user","content":"x","role":null}]`,
	`[{"role":"assistant","content":null,"tool_calls":[{"id":"a","function":{"name":"f"}},{"id":"b","function":{"name":"g"}}],"tool_calls":[{"id":"c"}]}]`,
	`[{"role":"assistant","content":null,"tool_calls":[null,{"id":"a","function":null}]}]`,
	`[{"role":"user","content":[{"type":"image_url","image_url":{"url":"u"},"image_url":{"detail":"high"}}]}]`,
	`[{"role":"user","content":[{"type":"image_url","image_url":null}]}]`,
	`[{"role":"user","content":[{"type":"text","text":5}]}]`,
	`[{"role":"user","content":[{"type":"other","image_url":"u"}]}]`,
	`[{"role":"user","content":[null]}]`, `[{"role":"user","content":[5]}]`, `[{"role":"user","content":[{"text":"no type"}]}]`,
	`[{"role":"user","content":{}}]`, `[{"role":"user","content":true}]`, `[{"role":"user"}]`, `[{"role":"robot","content":"x"}]`,
	`[{"content":"x"}]`, `[{"role":"tool","content":"x"}]`, `[{"role":"assistant","content":null,"tool_calls":[{"id":"a"}]}]`,
	`[{"role":5,"content":"x"}]`, `[{"role":"user","content":"x","name":5}]`, `[{"role":"user","content":"x","tool_calls":{}}]`,
	`[{"role":"user","content":"x","tool_calls":[5]}]`, `[{"role":"user","content":"x","tool_calls":[{"function":{"arguments":{}}}]}]`,
	`[{"role":"robot","content":"x"},5]`, `[{"role":"user","content":"x"},null,{"role":"robot"}]`,
	`[{"role":"user","content":[{"type":"text"}, 7]},{"role":5}]`, `[{"role":"user","content":"x"}] x`,
	`[]`, `null`, `{}`, `"x"`, `5`, `[5]`, `[null]`, `[[]]`, ``, `[`, `[{"role":"user","content":"x\u00"}]`,
}

// FuzzMessages: whatever a body's messages are, they are decoded into messages the domain's rules hold, or
// refused with a 400 naming the messages (or the body, when they make it no JSON); never a panic.
func FuzzMessages(f *testing.F) { jsonenctest.Seeds(f, messageSeeds, checkMessages) }

// TestMessagesAtBounds is FuzzMessages at the bounds, on inputs too long to be seeds the fuzzer mutates at speed:
// the most messages and parts, one past, and nesting past encoding/json's limit.
func TestMessagesAtBounds(t *testing.T) {
	parts := func(n int) string {
		return `{"role":"user","content":[` + strings.Repeat(`{"type":"text","text":"a"},`, n-1) + `{"type":"text","text":"a"}]}`
	}
	allParts := strings.Repeat(parts(chat.MaxParts)+",", chat.MaxTotalParts/chat.MaxParts-1)
	for _, tc := range []struct {
		raw   string
		field string // of the 400, "" when taken
	}{
		{`[` + allParts + parts(chat.MaxParts) + `]`, ""},
		{`[` + allParts + parts(chat.MaxParts) + `,{"role":"user","content":"a string is no part"}]`, ""},
		{`[` + allParts + parts(chat.MaxParts) + `,{"role":"user","content":[{"type":"text"}]}]`, "messages[10].content"},
		{`[` + allParts + parts(chat.MaxParts-1) + `,{"role":"user","content":[{"type":"text"},{"type":"text"}]}]`, "messages[10].content"},
		{`[{"role":"user","content":"x"}` + strings.Repeat(`,{"role":"user","content":"x"}`, chat.MaxMessages-1) + `]`, ""},
		{`[{"role":"user","content":"x"}` + strings.Repeat(`,{"role":"robot"}`, chat.MaxMessages) + `]`, "messages"},
		{`[{"role":"user","content":[` + strings.Repeat(`{"type":"text","text":"a"},`, chat.MaxParts) + `{"type":"text"}]}]`, "messages[0].content"},
		{`[{"role":"assistant","tool_calls":[` + strings.Repeat(`{"id":"c","function":{"name":"f"}},`, chat.MaxToolCalls-1) + `{"id":"c","function":{"name":"f"}}]}]`, ""},
		{`[{"role":"assistant","tool_calls":[` + strings.Repeat(`{},`, chat.MaxToolCalls) + `{}],"tool_calls":[{"id":"c","function":{"name":"f"}}]}]`,
			"messages[0].tool_calls"},
		// the body, the messages and the message hold the nesting: 10,000 in all is encoding/json's bound
		{`[{"role":"user","content":"x","x":` + strings.Repeat(`[`, 9997) + strings.Repeat(`]`, 9997) + `}]`, ""},
		{`[{"role":"user","content":"x","x":` + strings.Repeat(`[`, 9998) + strings.Repeat(`]`, 9998) + `}]`, "body"},
	} {
		checkMessages(t, []byte(tc.raw))
		_, err := request(t, `{"model":"m","messages":`+tc.raw+`}`)
		var de *domain.Error
		if tc.field == "" && err != nil || tc.field != "" && (!errors.As(err, &de) ||
			tc.field != "body" && de.Meta["field"] != tc.field || tc.field == "body" && de.Code != "invalid_json") {
			t.Errorf("%.60s…: %v, want a 400 naming %q", tc.raw, err, tc.field)
		}
	}
}

func checkMessages(t *testing.T, raw []byte) {
	t.Helper()
	r, err := request(t, `{"model":"m","messages":`+string(raw)+`}`)
	if err != nil {
		var de *domain.Error
		if !errors.As(err, &de) || de.Kind != domain.KindInvalid {
			t.Fatalf("%.200q: %v is no 400", raw, err)
		}
		if field, _ := de.Meta["field"].(string); field != "" && !strings.HasPrefix(field, "messages") && field != "body" && de.Code != "invalid_json" {
			t.Fatalf("%.200q: %v names another field", raw, err)
		}
		return
	}
	if err := r.CheckMessages(); err != nil {
		t.Fatalf("%.200q: taken, but the rules refuse it: %v", raw, err)
	}
	for _, m := range r.Messages {
		for _, p := range m.Content {
			if !domain.Storable(p.Text) || !utf8.Valid(p.Raw) || p.Raw != nil && !json.Valid(p.Raw) {
				t.Fatalf("%.200q: taken with a part %+v", raw, p)
			}
		}
	}
}

// FuzzDecode feeds arbitrary bytes to a chat body's way to its request: refused with a 400 (a 413 is the reading's,
// not here), or a request whose every value passed on is JSON and text, and whose lists are within their bounds.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"model":"bench/chat","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Write two hundred words."}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a\n\u00e9"},{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}],"provider":{"options":{"openai":{"seed":1e3}}}}`,
		` { "model" : "m" , "model" : "n" } `, `{}`, `{"a":null,"b":[],"c":{},"d":-0.5e-3,"e":false}`, `{"\u006dodel":"m","mo\"del":1}`,
		"{\"k\xff\":1}", `{"\ud800":1}`, "{\"\\ud83d\\ude00\":1}", `{"Model":"m","model":"n"}`, `null`, `[]`, `"x"`, ``, ` `,
		`{"a":1} {}`, `{"a":1}x`, `{"a":1`, `{"a":01}`, `{"a":"\x"}`, "{\"a\":\"\x01\"}", `{"a":[1,}`, `{"a" 1}`, `{,}`,
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"auto"}`,
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"stop":["a","b"],"n":1,"seed":7,"max_tokens":5,"max_completion_tokens":9}`,
		`{"model":"@preset/x","messages":[{"role":"user","content":"hi"}]}`,
		`{` + strings.Repeat(`"a":1,`, chat.MaxFields) + `"a":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := Decode(data)
		if err == nil {
			if _, err = b.Preset(); err == nil {
				var r chat.Request
				if r, err = b.Request(); err == nil {
					checkTaken(t, data, r)
				}
			}
		}
		var de *domain.Error
		if err != nil && (!errors.As(err, &de) || de.Kind != domain.KindInvalid) {
			t.Fatalf("%q: %v is no 400", data, err)
		}
	})
}

// checkTaken holds a request taken from data to what the gateway relies on: the rules hold, and what it passes on
// as it came is JSON and text.
func checkTaken(t *testing.T, data []byte, r chat.Request) {
	t.Helper()
	if err := r.Validate(); err != nil {
		t.Fatalf("%q: taken, but the rules refuse it: %v", data, err)
	}
	opaque := []domain.Opaque{r.ToolChoice, r.ResponseFormat}
	for _, v := range r.Extra {
		opaque = append(opaque, v)
	}
	for _, tool := range r.Tools {
		opaque = append(opaque, tool.Parameters)
	}
	for _, v := range opaque {
		if v != nil && (!json.Valid(v) || !utf8.Valid(v)) {
			t.Fatalf("%q: taken with %q to pass on", data, v)
		}
	}
	if len(r.Extra) > chat.MaxFields {
		t.Fatalf("%q: %d fields passed on", data, len(r.Extra))
	}
	_ = fmt.Sprint(r)
}
