package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/test/fakes"
	"github.com/switchboard-ai/switchboard/test/harness"
)

// wrongTypeRoutes are the routes that take a body, each with a body that uses every field the route reads, nested
// lists of objects included. TestWrongTypesNameTheField puts values of every other JSON type in place of each of
// their values, at every depth. ":hash", ":id" and ":slug" are replaced by real ones.
var wrongTypeRoutes = []struct{ method, path, body string }{
	{"POST", "/keys", `{"name":"k","limit":1.5,"limit_reset":"daily","include_byok_in_limit":true,
		"expires_at":"2099-01-01T00:00:00Z","creator_user_id":"u","workspace_id":"w","external":{"user":"u"}}`},
	{"PATCH", "/keys/:hash", `{"name":"k","disabled":false,"limit":2,"limit_reset":"weekly","include_byok_in_limit":false,
		"requests_per_minute":60}`},
	{"POST", "/organization/members", `{"email":"a@b.c","first_name":"a","last_name":"b","role":"member"}`},
	{"POST", "/workspaces", `{"name":"w","slug":"w"}`},
	{"POST", "/guardrails", wrongTypeGuardrail},
	{"PATCH", "/guardrails/:id", wrongTypeGuardrail},
	{"POST", "/guardrails/:id/assignments/members", `{"member_user_ids":["u"]}`},
	{"POST", "/guardrails/:id/assignments/members/remove", `{"member_user_ids":["u"]}`},
	{"POST", "/guardrails/:id/assignments/keys", `{"key_hashes":[":hash"]}`},
	{"POST", "/guardrails/:id/assignments/keys/remove", `{"key_hashes":[":hash"]}`},
	{"PATCH", "/presets/:slug", `{"name":"p","description":"d","status":"active","designated_version":1}`},
	{"POST", "/presets/:slug/chat/completions", wrongTypeChat},
	{"POST", "/presets/:slug/messages", `{"model":"chat","system":"s","max_tokens":10,"temperature":0.5,
		"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`},
	{"POST", "/presets/:slug/responses", `{"model":"chat","instructions":"s","max_output_tokens":10,"temperature":0.5,
		"input":[{"role":"user","content":"hi"}]}`},
	{"POST", "/audio/speech", `{"model":"tts","input":"hi","voice":"alloy","response_format":"mp3","speed":1,
		"provider":{"options":{"openai":{"a":1}}},"user":"u","session_id":"s"}`},
	{"POST", "/videos", `{"model":"sora","prompt":"p","duration":8,"resolution":"720p","aspect_ratio":"16:9",
		"size":"1280x720","seed":1,"generate_audio":true,"provider":{"options":{"openai":{"a":1}}},"user":"u","session_id":"s"}`},
	// Frames and references, which the provider of sora takes none of: their types are checked before that.
	{"POST", "/videos", `{"model":"sora","prompt":"p",
		"frame_images":[{"image_url":{"url":"https://example.com/a.png"},"frame_type":"first_frame"}],
		"input_references":[{"type":"image_url","image_url":{"url":"https://example.com/b.png"}}]}`},
	{"POST", "/chat/completions", wrongTypeChat},
}

// inference are the routes of wrongTypeRoutes that take an inference key.
var inference = map[string]bool{"/audio/speech": true, "/videos": true, "/chat/completions": true}

const wrongTypeGuardrail = `{"name":"g","description":"d","limit_usd":5,"reset_interval":"daily","allowed_models":["chat"],
	"ignored_models":["x"],"allowed_providers":["openai"],"ignored_providers":["x"],"allowed_data_regions":["eu"],
	"content_filters":[{"pattern":"a","action":"block","label":"l"}],
	"content_filter_builtins":[{"slug":"email","action":"block","scan_scope":"input"}],"include_byok_in_budgets":true}`

// wrongTypeChat is a chat request with every field the gateway reads, and messages of every role.
const wrongTypeChat = `{"model":"chat","models":["chat"],"messages":[
		{"role":"system","content":"s","name":"n"},
		{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"https://example.com/a.png","detail":"low"}}]},
		{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"r"}],
	"stream":false,"stream_options":{"include_usage":true},"max_tokens":10,"max_completion_tokens":10,"temperature":0.5,
	"top_p":0.9,"top_k":5,"min_p":0.1,"top_a":0.1,"frequency_penalty":0.1,"presence_penalty":0.1,"repetition_penalty":1.1,
	"stop":["x"],"seed":1,"n":1,"logprobs":false,"top_logprobs":1,"logit_bias":{"1":1},
	"tools":[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object"},"strict":false}}],
	"tool_choice":{"type":"function","function":{"name":"f"}},"parallel_tool_calls":true,
	"response_format":{"type":"json_object"},"user":"u","session_id":"s",
	"provider":{"order":["openai"],"only":["openai"],"ignore":["x"],"allow_fallbacks":true,"require_parameters":false,
		"sort":{"by":"price","partition":"model"},"max_price":{"prompt":1,"completion":"1"},"preferred_max_latency":{"p50":1,"p99":3},
		"preferred_min_throughput":5,"options":{"openai":{"a":1}}},
	"route":"fallback","transforms":["middle-out"],"usage":{"include":true},"reasoning":{"effort":"low"},
	"reasoning_effort":"low","metadata":{"a":"b"},"system":"s"}`

// wrongValues are what replaces a value: each of another JSON type than the value's, and every number (numbers
// out of every range, fractions, and strings that look like numbers included).
var wrongValues = []string{
	`null`, `"x"`, `"5"`, `""`, `true`, `5`, `-1`, `1.5`, `1e400`, `-1e-400`, `99999999999999999999`, `{}`, `{"a":[1]}`,
	`[]`, `[5]`, `["x"]`, `[{}]`, `[null]`, strings.Repeat("9", 1000),
}

// malformedBodies are not JSON, each in its own way: every route that takes a body answers them in its own words.
var malformedBodies = []string{
	`{"name" "x"}`, `{"name":x}`, `{"name":"\q"}`, "{\"name\":\"\x01\"}", `{"name":"a",}`, `{"name":tru}`, `{"name":-}`,
	"{\"name\":\"a\"}\xff", `{"name":"a"}{}`, `{"name":`, "\xef\xbb\xbf{}", `{'name':'a'}`, `{"name":01}`,
}

// wrongTypeQueries are query parameters of the wrong type, sent to every GET route.
var wrongTypeQueries = []string{
	"limit=x", "limit=1.5", "limit=1e3", "limit=-1", "limit=99999999999999999999", "limit=", "offset=x", "offset=-1",
	"offset=1e400", "include_disabled=yes", "include_disabled=2", "index=x", "index=-1", "index=1.5",
	"index=99999999999999999999", "workspace_id=5", "id=5", "limit[]=1", "limit=1&limit=x",
}

// goInternals are what a message must not hold: encoding/json's, strconv's and Go's own words, Go type names and
// the gateway's own package-qualified names.
var goInternals = regexp.MustCompile(`Go struct|Go value|json:|cannot unmarshal|strconv\.|invalid character|` +
	`looking for beginning|invalid syntax|out of range|value out|parsing time|\[\][a-z*{]|map\[|\*[a-z]|\bu?int(8|16|32|64)?\b|` +
	`\bfloat(32|64)\b|not (bool|number|non-number)\b|\bstruct ?\{|interface ?\{|\bany\b|\bfunc\(|\b(chat|domain|httpapi|guardrail|preset|speech|video|account|` +
	`generation|jsonenc|json|reflect|time|url|gin|ports|app)\.[A-Za-z]|goroutine|\.go:\d|panic|runtime\.|0x[0-9a-f]{6}`)

// TestWrongTypesNameTheField: a value of the wrong JSON type anywhere in a body, or a query parameter of the wrong
// type, is refused in the envelope with a message that names the field and what it must be; no answer quotes
// encoding/json, strconv or the gateway's Go types, and none is a 500.
func TestWrongTypesNameTheField(t *testing.T) {
	t.Parallel()
	o := fakes.NewOpenAI(t, "sk-up")
	g := harness.Start(t, harness.WithConfig(fmt.Sprintf(`providers:
  - {slug: openai, kind: openai, base_url: %s, api_key: sk-up, timeout: 10s, idle_timeout: 10s}
models:
  - {id: chat, modality: chat, endpoints: [{provider: openai, upstream_model: up-1}]}
  - {id: tts, modality: tts, endpoints: [{provider: openai, upstream_model: tts-1}]}
  - {id: sora, modality: video, endpoints: [{provider: openai, upstream_model: sora-2, pricing: {per_second: 0.1}}]}
`, o.BaseURL())))
	infer, _ := g.Key(t, nil)
	_, hash := g.Key(t, nil) // the key the PATCH changes: not the one the inference calls use
	if r := g.Do(t, "POST", "/presets/p/chat/completions", g.Admin, `{"model":"chat"}`); r.Status != 200 {
		t.Fatalf("preset: %d %s", r.Status, r.Body)
	}
	gr := g.Do(t, "POST", "/guardrails", g.Admin, `{"name":"g"}`)
	if gr.Status != 201 {
		t.Fatalf("guardrail: %d %s", gr.Status, gr.Body)
	}
	real := strings.NewReplacer(":hash", hash, ":id", gr.JSON(t)["data"].(map[string]any)["id"].(string), ":slug", "p")

	seen := map[string]bool{}
	// check judges an answer; when field is set (a value of the wrong type was put there), a refusal must name it,
	// the list or object that holds it, or a part of the value put there.
	check := func(t *testing.T, what string, r harness.Response, wrongType bool, field string) {
		t.Helper()
		if r.Status < 400 {
			return // a field the gateway passes on as it came (provider options) takes any value
		}
		if r.Status != http.StatusBadRequest && r.Status != http.StatusRequestEntityTooLarge && (wrongType || r.Status >= 500) {
			t.Errorf("%s: status %d, want 400: %.300s", what, r.Status, r.Body)
		}
		var env struct {
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(r.Body, &env); err != nil || env.Error.Code != r.Status || env.Error.Message == "" {
			t.Errorf("%s: status %d outside the envelope: %.300s", what, r.Status, r.Body)
			return
		}
		if m := goInternals.FindString(env.Error.Message); m != "" {
			t.Errorf("%s: status %d, message quotes Go's internals (%q): %s", what, r.Status, m, env.Error.Message)
		}
		if named, _, _ := strings.Cut(env.Error.Message, ": "); wrongType && r.Status == http.StatusBadRequest &&
			field != "" && !strings.HasPrefix(field, named) && !strings.HasPrefix(named, field) {
			t.Errorf("%s: message names %q, not the field: %s", what, named, env.Error.Message)
		}
		if testing.Verbose() && !seen[env.Error.Message] {
			seen[env.Error.Message] = true
			t.Logf("%d %s  [%s]", r.Status, env.Error.Message, what)
		}
	}

	for _, rt := range wrongTypeRoutes {
		path, base := real.Replace(rt.path), real.Replace(rt.body)
		var doc any
		if err := json.Unmarshal([]byte(base), &doc); err != nil {
			t.Fatalf("%s %s: base body: %v", rt.method, rt.path, err)
		}
		key := g.Admin
		if inference[rt.path] {
			key = infer
		}
		for _, m := range mutations(doc) {
			what := fmt.Sprintf("%s %s with %s", rt.method, rt.path, m.where)
			check(t, what, g.Do(t, rt.method, path, key, m.body), m.wrongType, m.field)
		}
		for _, b := range malformedBodies {
			what := fmt.Sprintf("%s %s with %q", rt.method, rt.path, b)
			r := g.Do(t, rt.method, path, key, b)
			if r.Status != http.StatusBadRequest {
				t.Errorf("%s: status %d, want 400: %.300s", what, r.Status, r.Body)
			}
			check(t, what, r, false, "")
		}
	}
	for _, r := range []struct{ method, path string }{
		{"GET", "/keys"}, {"GET", "/organization/members"}, {"GET", "/workspaces"}, {"GET", "/guardrails"},
		{"GET", "/guardrails/:id/assignments/members"}, {"GET", "/guardrails/:id/assignments/keys"},
		{"GET", "/guardrails/assignments/members"}, {"GET", "/guardrails/assignments/keys"}, {"GET", "/presets"},
		{"GET", "/presets/:slug"}, {"GET", "/presets/:slug/versions"}, {"GET", "/presets/:slug/versions/1"},
		{"GET", "/generation"}, {"GET", "/generation/content"}, {"GET", "/videos/gen-vid-1-x/content"},
		{"GET", "/videos/models"}, {"GET", "/models"}, {"GET", "/providers"}, {"GET", "/credits"}, {"GET", "/key"},
		{"GET", "/presets/:slug/versions/x"}, {"GET", "/presets/:slug/versions/99999999999999999999"},
	} {
		for _, q := range wrongTypeQueries {
			what := r.method + " " + r.path + "?" + q
			check(t, what, g.Do(t, r.method, real.Replace(r.path)+"?"+q, g.Admin, nil), false, "")
		}
	}
}

// mutation is a body with one value replaced; wrongType when the new value is of another JSON type than the old
// and not null.
type mutation struct {
	where, body string
	field       string // the path of the value replaced, as messages name it; empty for the whole body
	wrongType   bool
}

// mutations replaces every value of doc, at every depth, by each of wrongValues, and the whole body too.
func mutations(doc any) []mutation {
	var out []mutation
	var walk func(where string, v any, set func(any), restore func())
	root := doc
	encode := func() string {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(root)
		return b.String()
	}
	walk = func(where string, v any, set func(any), restore func()) {
		for _, w := range wrongValues {
			var nv any
			_ = json.Unmarshal([]byte(w), &nv)
			if w == `1e400` || w == `-1e-400` || w == `99999999999999999999` {
				nv = json.Number(w) // kept as written
			}
			if jsonType(nv) == jsonType(v) && jsonType(v) != "number" {
				continue
			}
			set(nv)
			field := strings.TrimPrefix(strings.TrimPrefix(where, "body"), ".")
			out = append(out, mutation{where: where + "=" + w, body: encode(), field: field,
				wrongType: nv != nil && jsonType(nv) != jsonType(v)})
			restore()
		}
		switch v := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				old := v[k]
				walk(where+"."+k, old, func(n any) { v[k] = n }, func() { v[k] = old })
			}
		case []any:
			for i, old := range v {
				walk(where+"["+strconv.Itoa(i)+"]", old, func(n any) { v[i] = n }, func() { v[i] = old })
			}
		}
	}
	walk("body", doc, func(n any) { root = n }, func() { root = doc })
	return out
}

// jsonType is the JSON type of a decoded value.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64, json.Number:
		return "number"
	case []any:
		return "array"
	}
	return "object"
}
