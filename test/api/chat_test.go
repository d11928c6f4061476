package api_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/test/fakes"
	"github.com/switchboard-ai/switchboard/test/harness"
)

// chatUpstreams are two OpenAI-compatible fakes serving model "chat" in order.
type chatUpstreams struct{ first, second *fakes.OpenAI }

func newChat(t *testing.T, extra string) (*chatUpstreams, *harness.Gateway) {
	u := &chatUpstreams{first: fakes.NewOpenAI(t, "sk-1"), second: fakes.NewOpenAI(t, "sk-2")}
	g := harness.Start(t, harness.WithConfig(fmt.Sprintf(`providers:
  - {slug: first, kind: openai, base_url: %s, api_key: sk-1, timeout: 10s, idle_timeout: 10s}
  - {slug: second, kind: openai, base_url: %s, api_key: sk-2, timeout: 10s, idle_timeout: 10s}
models:
  - id: chat
    modality: chat
    endpoints:
      - {provider: first, upstream_model: up-1, pricing: {per_million_prompt_tokens: 2, per_million_completion_tokens: 8}}
      - {provider: second, upstream_model: up-2, pricing: {per_million_prompt_tokens: 3, per_million_completion_tokens: 9}}
  - {id: tts, modality: tts, endpoints: [{provider: first, upstream_model: tts-1}]}
%s`, u.first.BaseURL(), u.second.BaseURL(), extra)))
	return u, g
}

func hi(extra map[string]any) map[string]any {
	body := map[string]any{"model": "chat", "messages": []any{map[string]any{"role": "user", "content": "Hi there"}}}
	for k, v := range extra {
		body[k] = v
	}
	return body
}

// events reads a server-sent event stream's data lines.
func events(t *testing.T, body []byte) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "data: ") {
			out = append(out, strings.TrimPrefix(line, "data: "))
		} else if line != "" {
			t.Fatalf("not an SSE data line: %q", line)
		}
	}
	return out
}

func TestChatCompletion(t *testing.T) {
	t.Parallel()
	u, g := newChat(t, "")
	key, _ := g.Key(t, nil)

	r := g.Do(t, "POST", "/chat/completions", key, hi(map[string]any{"user": "end-user", "session_id": "s1"}))
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	harness.AssertShape(t, r.JSON(t), "{choices:[{finish_reason:string,index:number,logprobs:null,message:{content:string,role:string},native_finish_reason:string}],created:number,id:string,model:string,object:string,provider:string,system_fingerprint:null,usage:{completion_tokens:number,completion_tokens_details:{reasoning_tokens:number},cost:number,prompt_tokens:number,prompt_tokens_details:{cached_tokens:number},total_tokens:number}}")
	body := r.JSON(t)
	choice := body["choices"].([]any)[0].(map[string]any)
	msg := choice["message"].(map[string]any)
	usage := body["usage"].(map[string]any)
	if body["object"] != "chat.completion" || body["id"] != r.Header.Get("X-Generation-Id") || body["model"] != "chat" ||
		msg["content"] != "Hello from the fake upstream." || choice["finish_reason"] != "stop" ||
		jsonString(usage["prompt_tokens"]) != "2" || jsonString(usage["completion_tokens"]) != "6" || jsonString(usage["cost"]) != "0.000052" {
		t.Fatalf("completion: %s", r.Body)
	}
	if _, ok := body["system_fingerprint"]; !ok {
		t.Fatal("system_fingerprint is a required key")
	}
	rec := generationOf(t, g, r)
	for k, v := range map[string]string{"api_type": "completions", "model": "chat", "provider_name": "first", "total_cost": "0.000052",
		"tokens_prompt": "2", "tokens_completion": "6", "native_tokens_prompt": "2", "native_tokens_completion": "6",
		"finish_reason": "stop", "native_finish_reason": "stop", "streamed": "false", "upstream_id": "req_fake_chat",
		"external_user": "end-user", "session_id": "s1"} {
		if got := fmt.Sprint(jsonString(rec[k])); got != v && fmt.Sprint(rec[k]) != v {
			t.Errorf("record %s = %v, want %s", k, rec[k], v)
		}
	}
	content := g.Do(t, "GET", "/generation/content?id="+rec["id"].(string), g.Admin, nil).JSON(t)["data"].(map[string]any)
	if content["output"].(map[string]any)["completion"] != "Hello from the fake upstream." ||
		content["input"].(map[string]any)["messages"].([]any)[0].(map[string]any)["content"] != "Hi there" {
		t.Errorf("content = %v", content)
	}
	if r := u.first.Requests()[0]; !bytes.Contains(r.Body, []byte(`"model":"up-1"`)) || !bytes.Contains(r.Body, []byte(`"stream":true`)) {
		t.Errorf("upstream request: %s", r.Body)
	}
}

func TestChatStream(t *testing.T) {
	t.Parallel()
	_, g := newChat(t, "")
	key, _ := g.Key(t, nil)
	r := g.Do(t, "POST", "/chat/completions", key, hi(map[string]any{"stream": true, "stream_options": map[string]any{"include_usage": true}}))
	if r.Status != 200 || r.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %v %s", r.Status, r.Header, r.Body)
	}
	evs := events(t, r.Body)
	if evs[len(evs)-1] != "[DONE]" {
		t.Fatalf("no [DONE]: %v", evs)
	}
	var text strings.Builder
	var finish any
	var usage map[string]any
	for _, e := range evs[:len(evs)-1] {
		var c map[string]any
		if err := json.Unmarshal([]byte(e), &c); err != nil || c["object"] != "chat.completion.chunk" || c["id"] != r.Header.Get("X-Generation-Id") {
			t.Fatalf("chunk %s: %v", e, err)
		}
		if u, ok := c["usage"].(map[string]any); ok {
			usage = u
		}
		for _, ch := range c["choices"].([]any) {
			ch := ch.(map[string]any)
			if s, ok := ch["delta"].(map[string]any)["content"].(string); ok {
				text.WriteString(s)
			}
			if ch["finish_reason"] != nil {
				finish = ch["finish_reason"]
			}
		}
	}
	if text.String() != "Hello from the fake upstream." || finish != "stop" || usage == nil || usage["completion_tokens"] != 6.0 {
		t.Fatalf("text %q finish %v usage %v", text.String(), finish, usage)
	}
	rec := generationOf(t, g, r)
	if rec["streamed"] != true || jsonString(rec["total_cost"]) != "0.000052" || rec["latency"] == nil {
		t.Fatalf("record %v", rec)
	}
	// Without include_usage there is no usage chunk.
	r = g.Do(t, "POST", "/chat/completions", key, hi(map[string]any{"stream": true}))
	if bytes.Contains(r.Body, []byte(`"usage"`)) {
		t.Fatalf("usage without include_usage: %s", r.Body)
	}
}

// TestChatFailover moves on before the first token, and a stream that breaks after it ends with an error
// event, recorded, and billed for what was delivered.
func TestChatFailover(t *testing.T) {
	t.Parallel()
	u, g := newChat(t, "")
	key, _ := g.Key(t, nil)
	u.first.Script(fakes.Step{Status: 500, Body: fakes.OpenAIServerError})
	r := g.Do(t, "POST", "/chat/completions", key, hi(nil))
	if r.Status != 200 || r.JSON(t)["provider"] != "second" {
		t.Fatalf("failover: %d %s", r.Status, r.Body)
	}
	rec := generationOf(t, g, r)
	if prs := rec["provider_responses"].([]any); len(prs) != 2 || rec["provider_name"] != "second" || jsonString(rec["total_cost"]) != "0.00006" {
		t.Fatalf("record %v", rec)
	}

	// A stream that breaks before its first token fails over too.
	u.first.Script(fakes.Step{Abort: 300})
	if r := g.Do(t, "POST", "/chat/completions", key, hi(map[string]any{"stream": true})); r.Status != 200 || u.second.Calls() != 2 {
		t.Fatalf("break before the first token: %d %s", r.Status, r.Body)
	}

	// The stream breaks after its first tokens: no failover, an error event, a 502 on the record.
	u.first.Script(fakes.Step{Abort: 700})
	r = g.Do(t, "POST", "/chat/completions", key, hi(map[string]any{"stream": true}))
	evs := events(t, r.Body)
	last := evs[len(evs)-1]
	if r.Status != 200 || !strings.Contains(last, `"error":{"code":502`) || !strings.Contains(last, `"finish_reason":"error"`) || u.second.Calls() != 2 {
		t.Fatalf("broken stream: %d %v", r.Status, evs)
	}
	rec = generationOf(t, g, r)
	if rec["finish_reason"] != "error" || failureOf(t, g, rec) != "502" || jsonString(rec["tokens_prompt"]) == "0" || jsonString(rec["total_cost"]) == "0" {
		t.Fatalf("record of a broken stream %v", rec)
	}

	// Not streamed, the same break is what the reference does with an answer that breaks mid-way: no failover
	// (the provider began to answer), a 502 recorded as failed, and no charge: nothing was delivered.
	u.first.Script(fakes.Step{Abort: 700})
	r = g.Do(t, "POST", "/chat/completions", key, hi(nil))
	harness.AssertError(t, r, 502)
	if rec := generationOf(t, g, r); jsonString(rec["total_cost"]) != "0" || rec["finish_reason"] != "error" ||
		failureOf(t, g, rec) != "502" || u.second.Calls() != 2 {
		t.Fatalf("an undelivered answer: %v, %d calls to the second provider", rec, u.second.Calls())
	}
}

// TestChatNothingBeforeTheEndFailsOver: an upstream whose stream ends having sent no token — nothing but its usage
// before [DONE] — has not answered: the call fails over before anything goes to the caller, and is billed for the
// answer that came, not for the empty one. One that ends with a finish reason and no token has answered (an empty
// completion, as a model may write): no failover.
func TestChatNothingBeforeTheEndFailsOver(t *testing.T) {
	t.Parallel()
	u, g := newChat(t, "")
	key, _ := g.Key(t, nil)
	const head = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"up-1","choices":`
	usage := head + `[],"usage":{"prompt_tokens":2,"completion_tokens":0,"total_tokens":2}}` + "\n\n"
	for _, tc := range []struct {
		name     string
		events   []string
		provider string // the provider that answered
		cost     string
	}{
		{"usage alone", []string{usage, "data: [DONE]\n\n"}, "second", "0.00006"},
		{"a role, then usage", []string{head + `[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n",
			usage, "data: [DONE]\n\n"}, "second", "0.00006"},
		{"a finish reason", []string{head + `[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n", usage, "data: [DONE]\n\n"},
			"first", "0.000004"},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s stream %v", tc.name, stream), func(t *testing.T) {
				u.first.Script(fakes.Step{Events: tc.events})
				r := g.Do(t, "POST", "/chat/completions", key, hi(map[string]any{"stream": stream}))
				rec := generationOf(t, g, r)
				if r.Status != 200 || rec["provider_name"] != tc.provider || jsonString(rec["total_cost"]) != tc.cost {
					t.Fatalf("%d %s: record %v, want provider %s cost %s", r.Status, r.Body, rec, tc.provider, tc.cost)
				}
			})
		}
	}
}

// TestChatFinishReasonWhenNoneCame: an upstream whose stream ends ([DONE]) without a finish reason has its answer
// end with "stop", the word its record keeps, not with a finish_reason "" that no OpenAI client knows.
func TestChatFinishReasonWhenNoneCame(t *testing.T) {
	t.Parallel()
	u, g := newChat(t, "")
	key, _ := g.Key(t, nil)
	u.first.Script(fakes.Step{Events: []string{
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"up-1","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}` + "\n\n",
		"data: [DONE]\n\n"}})
	r := g.Do(t, "POST", "/chat/completions", key, hi(nil))
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	choice := r.JSON(t)["choices"].([]any)[0].(map[string]any)
	rec := generationOf(t, g, r)
	if choice["message"].(map[string]any)["content"] != "Hi" || choice["finish_reason"] != "stop" || choice["native_finish_reason"] != "stop" ||
		rec["finish_reason"] != "stop" || rec["native_finish_reason"] != "stop" {
		t.Fatalf("answer %s, record finish %v native %v", r.Body, rec["finish_reason"], rec["native_finish_reason"])
	}
}

// TestChatBrokenAfterItsFinishReason: a stream that breaks after its finish reason came, before its end, is a
// failed call like any broken stream, and its record says so (finish_reason "error", the upstream's word kept as
// native_finish_reason), whether the answer was streamed or not. Not streamed, the record said "stop" for a 502.
func TestChatBrokenAfterItsFinishReason(t *testing.T) {
	t.Parallel()
	u, g := newChat(t, "")
	key, _ := g.Key(t, nil)
	const head = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"up-1","choices":`
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream %v", stream), func(t *testing.T) {
			u.first.Script(fakes.Step{Events: []string{head + `[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}` + "\n\n",
				head + `[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n", "data: {not json\n\n"}})
			r := g.Do(t, "POST", "/chat/completions", key, hi(map[string]any{"stream": stream}))
			if !stream {
				harness.AssertError(t, r, 502)
			} else if evs := events(t, r.Body); !strings.Contains(evs[len(evs)-1], `"error":{"code":502`) {
				t.Fatalf("stream: %v", evs)
			}
			rec := generationOf(t, g, r)
			if rec["finish_reason"] != "error" || rec["native_finish_reason"] != "stop" || failureOf(t, g, rec) != "502" {
				t.Fatalf("record finish %v native %v failure %s", rec["finish_reason"], rec["native_finish_reason"], failureOf(t, g, rec))
			}
		})
	}
}

// contentOf is a generation's stored content.
func contentOf(t *testing.T, g *harness.Gateway, rec map[string]any) map[string]any {
	t.Helper()
	return g.Do(t, "GET", "/generation/content?id="+rec["id"].(string), g.Admin, nil).JSON(t)["data"].(map[string]any)
}

// failureOf is the status of the failure a generation's content keeps, "null" when it has none.
func failureOf(t *testing.T, g *harness.Gateway, rec map[string]any) string {
	t.Helper()
	if e, ok := contentOf(t, g, rec)["error"].(map[string]any); ok {
		return jsonString(e["status"])
	}
	return "null"
}

func TestChatBadInput(t *testing.T) {
	t.Parallel()
	_, g := newChat(t, "")
	key, _ := g.Key(t, nil)
	msgs := func(m ...any) map[string]any { return map[string]any{"model": "chat", "messages": m} }
	for _, tc := range []struct {
		name  string
		body  any
		field string
	}{
		{"no model", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "x"}}}, "model"},
		{"no messages", map[string]any{"model": "chat"}, "messages"},
		{"empty messages", msgs(), "messages"},
		{"bad role", msgs(map[string]any{"role": "robot", "content": "x"}), "messages[0].role"},
		{"content not text", msgs(map[string]any{"role": "user", "content": 5}), "messages[0].content"},
		{"NUL", msgs(map[string]any{"role": "user", "content": "a\x00b"}), "messages[0].content[0].text"},
		{"temperature", hi(map[string]any{"temperature": 3}), "temperature"},
		{"max_tokens", hi(map[string]any{"max_tokens": 0}), "max_tokens"},
		{"n", hi(map[string]any{"n": 2}), "n"},
		{"tools", hi(map[string]any{"tools": []any{map[string]any{"type": "function"}}}), "tools[0]"},
		{"tool without id", msgs(map[string]any{"role": "tool", "content": "x"}), "messages[0].tool_call_id"},
		{"model type", map[string]any{"model": 5, "messages": []any{}}, "model"},
		{"a tts model", hi(map[string]any{"model": "tts"}), "model"},
		{"bad preset", hi(map[string]any{"model": "@preset/Bad_Slug"}), "model"},
		{"bad preset version", hi(map[string]any{"preset": "p@0"}), "preset"},
		// a field the gateway reads, in another case: an upstream may read it as that field
		{"model in another case", hi(map[string]any{"MODEL": "other"}), "MODEL"},
		{"stream by Unicode's folding", hi(map[string]any{"ſtream": true}), "ſtream"},
		{"user in another case", hi(map[string]any{"User": "end-user-7"}), "User"},
	} {
		e := harness.AssertError(t, g.Do(t, "POST", "/chat/completions", key, tc.body), 400)
		if !strings.Contains(fmt.Sprint(e["message"]), tc.field) {
			t.Errorf("%s: message %q does not name %s", tc.name, e["message"], tc.field)
		}
	}
	harness.AssertError(t, g.Do(t, "POST", "/chat/completions", key, `[1]`), 400)
	harness.AssertError(t, g.Do(t, "POST", "/chat/completions", key, hi(map[string]any{"model": "nope"})), 404)
}

// upstreamBody is what the first fake got in its i-th request.
func upstreamBody(t *testing.T, f *fakes.OpenAI, i int) map[string]any {
	t.Helper()
	var body map[string]any
	if err := json.Unmarshal(f.Requests()[i].Body, &body); err != nil {
		t.Fatal(err)
	}
	return body
}

// TestChatPresets applies a preset named in the model, in a field or after a model, by its designated or a
// numbered version; the request's fields win; the record keeps the preset id; a disabled preset is refused.
func TestChatPresets(t *testing.T) {
	t.Parallel()
	u, g := newChat(t, "")
	key, _ := g.Key(t, nil)
	r := g.Do(t, "POST", "/presets/helper/chat/completions", key, map[string]any{"model": "chat", "temperature": 0.3, "top_k": 5,
		"messages": []any{map[string]any{"role": "system", "content": "You are terse."}}})
	if r.Status != 200 {
		t.Fatalf("preset: %d %s", r.Status, r.Body)
	}
	presetID := r.JSON(t)["data"].(map[string]any)["id"]
	g.Do(t, "POST", "/presets/helper/chat/completions", key, map[string]any{"model": "chat", "temperature": 1.5,
		"messages": []any{map[string]any{"role": "system", "content": "You are verbose."}}}) // version 2, designated

	for i, tc := range []struct {
		body        map[string]any
		system      string
		temperature float64
	}{
		{hi(map[string]any{"model": "@preset/helper"}), "You are verbose.", 1.5},
		{hi(map[string]any{"model": "@preset/helper@1"}), "You are terse.", 0.3},
		{hi(map[string]any{"preset": "helper@1", "temperature": 0.9}), "You are terse.", 0.9}, // the request wins
		{hi(map[string]any{"model": "chat@preset/helper@1"}), "You are terse.", 0.3},
		{map[string]any{"model": "@preset/helper@1", "messages": []any{map[string]any{"role": "system", "content": "Mine."},
			map[string]any{"role": "user", "content": "Hi there"}}}, "Mine.", 0.3},
	} {
		r := g.Do(t, "POST", "/chat/completions", key, tc.body)
		if r.Status != 200 {
			t.Fatalf("case %d: %d %s", i, r.Status, r.Body)
		}
		body := upstreamBody(t, u.first, len(u.first.Requests())-1)
		msgs := body["messages"].([]any)
		first := msgs[0].(map[string]any)
		if first["role"] != "system" || first["content"] != tc.system || body["temperature"] != tc.temperature ||
			body["model"] != "up-1" || msgs[len(msgs)-1].(map[string]any)["content"] != "Hi there" {
			t.Fatalf("case %d: upstream got %v", i, body)
		}
		if _, ok := body["preset"]; ok {
			t.Fatalf("case %d: the preset field went upstream", i)
		}
		if i == 1 && body["top_k"] != 5.0 {
			t.Fatalf("the preset's unknown field did not pass through: %v", body)
		}
		if rec := generationOf(t, g, r); rec["preset_id"] != presetID {
			t.Fatalf("case %d: preset_id %v, want %v", i, rec["preset_id"], presetID)
		}
	}
	for _, tc := range []struct {
		body   map[string]any
		status int
	}{
		{hi(map[string]any{"model": "@preset/nope"}), 404},
		{hi(map[string]any{"model": "@preset/helper@9"}), 404},
		// past what a version column holds (PostgreSQL's integer): no version, not a 500
		{hi(map[string]any{"model": "@preset/helper@2147483648"}), 404},
		{hi(map[string]any{"preset": "helper@9223372036854775807"}), 404},
		{hi(map[string]any{"model": "@preset/helper", "preset": "other"}), 400},
	} {
		harness.AssertError(t, g.Do(t, "POST", "/chat/completions", key, tc.body), tc.status)
	}
	g.Do(t, "PATCH", "/presets/helper", key, map[string]any{"status": "disabled"})
	e := harness.AssertError(t, g.Do(t, "POST", "/chat/completions", key, hi(map[string]any{"model": "@preset/helper"})), 403)
	if !strings.Contains(fmt.Sprint(e["message"]), "disabled") {
		t.Fatalf("refusal: %v", e)
	}
	g.Do(t, "PATCH", "/presets/helper", key, map[string]any{"status": "archived"})
	e = harness.AssertError(t, g.Do(t, "POST", "/chat/completions", key, hi(map[string]any{"preset": "helper"})), 403)
	if !strings.Contains(fmt.Sprint(e["message"]), "archived") {
		t.Fatalf("refusal: %v", e)
	}
}

// TestChatGuardrails: content filters scan every message's text, provider filters narrow the endpoints, and
// budgets are reserved from the estimate.
func TestChatGuardrails(t *testing.T) {
	t.Parallel()
	u, g := newChat(t, "")
	key, hash := g.Key(t, nil)
	r := g.Do(t, "POST", "/guardrails", g.Admin, `{"name":"chat rails","ignored_providers":["first"],
		"content_filter_builtins":[{"slug":"email","action":"redact"}],
		"content_filters":[{"pattern":"(?i)project falcon","action":"block","label":"codename"}]}`)
	gr := r.JSON(t)["data"].(map[string]any)["id"].(string)
	if r := g.Do(t, "POST", "/guardrails/"+gr+"/assignments/keys", g.Admin, map[string]any{"key_hashes": []string{hash}}); r.Status != 200 {
		t.Fatalf("assign: %d %s", r.Status, r.Body)
	}
	body := map[string]any{"model": "chat", "messages": []any{
		map[string]any{"role": "system", "content": "Reply to ada@example.com"},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "I am bob@example.org"},
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": "https://img.example/a.png"}}}}}}
	if r := g.Do(t, "POST", "/chat/completions", key, body); r.Status != 200 || r.JSON(t)["provider"] != "second" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	got := string(u.second.Requests()[0].Body)
	if u.first.Calls() != 0 || strings.Contains(got, "@example") || strings.Count(got, "[EMAIL]") != 2 || !strings.Contains(got, "a.png") {
		t.Fatalf("upstream got %s", got)
	}
	body["messages"] = append(body["messages"].([]any), map[string]any{"role": "assistant", "content": "about Project Falcon"})
	harness.AssertError(t, g.Do(t, "POST", "/chat/completions", key, body), 400)

	// A budget smaller than max_tokens of completion refuses the call before it is made.
	if r := g.Do(t, "PATCH", "/guardrails/"+gr, g.Admin, map[string]any{"limit_usd": 0.001, "reset_interval": "daily"}); r.Status != 200 {
		t.Fatalf("patch: %d %s", r.Status, r.Body)
	}
	harness.AssertError(t, g.Do(t, "POST", "/chat/completions", key, hi(map[string]any{"max_tokens": 100_000})), 403)
	if r := g.Do(t, "POST", "/chat/completions", key, hi(map[string]any{"max_tokens": 10})); r.Status != 200 {
		t.Fatalf("within budget: %d %s", r.Status, r.Body)
	}
}

// TestChatGuardrailBudget: a model filter refuses a model it does not allow; a flag lands on the record; the
// budget holds each call's estimate — the prompt plus max_tokens, or 4096 tokens when the request sets none —
// from before the call until it settles at its real cost.
func TestChatGuardrailBudget(t *testing.T) {
	t.Parallel()
	u, g := newChat(t, "  - {id: other, modality: chat, endpoints: [{provider: second, upstream_model: up-o}]}\n")
	key, hash := g.Key(t, nil)
	// Only the second endpoint: 3 micro-dollars a prompt token, 9 a completion token; a budget of 1,000.
	r := g.Do(t, "POST", "/guardrails", g.Admin, `{"name":"chat budget","ignored_providers":["first"],"allowed_models":["chat"],
		"limit_usd":0.001,"reset_interval":"daily","content_filter_builtins":[{"slug":"secrets","action":"flag"}]}`)
	gr := r.JSON(t)["data"].(map[string]any)["id"].(string)
	if r := g.Do(t, "POST", "/guardrails/"+gr+"/assignments/keys", g.Admin, map[string]any{"key_hashes": []string{hash}}); r.Status != 200 {
		t.Fatalf("assign: %d %s", r.Status, r.Body)
	}
	e := harness.AssertError(t, g.Do(t, "POST", "/chat/completions", key, hi(map[string]any{"model": "other"})), 403)
	if e["metadata"].(map[string]any)["guardrail_id"] != gr {
		t.Fatalf("model filter: %v", e)
	}
	// No max_tokens: 4,096 completion tokens are assumed (36,900), more than the budget.
	e = harness.AssertError(t, g.Do(t, "POST", "/chat/completions", key, hi(nil)), 403)
	if !strings.Contains(fmt.Sprint(e["message"]), "chat budget") {
		t.Fatalf("default estimate: %v", e)
	}
	// A flagged message is sent and recorded with its flag: 11 prompt tokens and 10 completion tokens cost 123.
	flagged := hi(map[string]any{"max_tokens": 10, "messages": []any{map[string]any{"role": "system", "content": "Be brief."},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "key sk-abcdefghijklmnopqrstuvwx"}}}}})
	r = g.Do(t, "POST", "/chat/completions", key, flagged)
	if r.Status != 200 {
		t.Fatalf("flagged: %d %s", r.Status, r.Body)
	}
	rec := generationOf(t, g, r)
	if flags, _ := rec["guardrail_flags"].([]any); len(flags) != 1 || flags[0] != "secrets" || jsonString(rec["total_cost"]) != "0.000123" {
		t.Fatalf("record %v", rec)
	}
	// 123 spent. A call of max_tokens 50 is estimated at 12 prompt tokens (8 bytes, a token a byte, and 4 for the
	// message) and 50 completion tokens: 486. While one is held upstream, a second does not fit (123 + 486 + 486 > 1,000).
	release := make(chan struct{})
	u.second.Script(fakes.Step{Hold: release})
	held := make(chan harness.Response)
	go func() { held <- g.Do(t, "POST", "/chat/completions", key, hi(map[string]any{"max_tokens": 50})) }()
	harness.Eventually(t, 5*time.Second, func() bool {
		select {
		case r := <-held:
			t.Fatalf("the held call ended: %d %s", r.Status, r.Body)
		default:
		}
		return u.second.Calls() == 1 // the script counts from here
	})
	harness.AssertError(t, g.Do(t, "POST", "/chat/completions", key, hi(map[string]any{"max_tokens": 50})), 403)
	close(release)
	if r := <-held; r.Status != 200 {
		t.Fatalf("held call: %d %s", r.Status, r.Body)
	}
	// It settled at its real cost, 456 (579 spent): one of 486 more does not fit, one of max_tokens 10 (126) does.
	harness.Eventually(t, 5*time.Second, func() bool {
		return g.Do(t, "POST", "/chat/completions", key, hi(map[string]any{"max_tokens": 10})).Status == 200
	})
	harness.AssertError(t, g.Do(t, "POST", "/chat/completions", key, hi(map[string]any{"max_tokens": 50})), 403)
	if n := u.second.Calls(); n != 2 {
		t.Fatalf("refused calls reached the provider: %d calls", n)
	}
}

// TestChatKeyLimitHoldsTheCap: a key limit of $0.05 and an upstream that would write 20,000 completion tokens
// ($0.16 at 8 micro-dollars a token) unless it is sent a smaller limit. A call with no max_tokens is sent
// max_completion_tokens 4,096, what its budget was reserved for: it costs $0.032772 (2 prompt tokens at 2, as the
// fake counts them) and the next one does not fit. A limit past the key's, in the request or its provider.options,
// is refused before the upstream is called. Before: no limit was sent, and the first call spent $0.160004.
func TestChatKeyLimitHoldsTheCap(t *testing.T) {
	t.Parallel()
	u, g := newChat(t, "")
	for _, tc := range []struct {
		name     string
		body     map[string]any
		statuses []int
		sent     []int
		usage    string
	}{
		{"no max_tokens: the default is sent", hi(nil), []int{200, 402}, []int{4096}, "0.032772"},
		{"max_tokens past the limit", hi(map[string]any{"max_tokens": 20000}), []int{402}, nil, "0"},
		{"provider.options max_tokens past the limit", hi(map[string]any{"provider": map[string]any{
			"options": map[string]any{"first": map[string]any{"max_tokens": 20000}}}}), []int{402}, nil, "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, _ := g.Key(t, map[string]any{"limit": 0.05})
			u.first.Script(fakes.Step{Ramble: 20000}, fakes.Step{Ramble: 20000})
			var statuses []int
			for range tc.statuses {
				r := g.Do(t, "POST", "/chat/completions", key, tc.body)
				statuses = append(statuses, r.Status)
				if r.Status == 200 {
					harness.Eventually(t, 5*time.Second, func() bool { // the call has settled
						return jsonString(g.Do(t, "GET", "/key", key, nil).JSON(t)["data"].(map[string]any)["usage"]) != "0"
					})
				}
			}
			var sent []int
			for _, r := range u.first.Requests() {
				var b struct {
					MaxCompletionTokens int `json:"max_completion_tokens"`
				}
				if err := json.Unmarshal(r.Body, &b); err != nil {
					t.Fatal(err)
				}
				sent = append(sent, b.MaxCompletionTokens)
			}
			usage := jsonString(g.Do(t, "GET", "/key", key, nil).JSON(t)["data"].(map[string]any)["usage"])
			if fmt.Sprint(statuses) != fmt.Sprint(tc.statuses) || fmt.Sprint(sent) != fmt.Sprint(tc.sent) || usage != tc.usage {
				t.Fatalf("statuses %v, upstream sent max_completion_tokens %v, usage %s; want %v, %v, %s",
					statuses, sent, usage, tc.statuses, tc.sent, tc.usage)
			}
		})
	}
}

// TestChatProviderPreferences: provider.order puts a provider first, allow_fallbacks false keeps the call on it,
// and preferences no endpoint meets are a 404 naming provider.
func TestChatProviderPreferences(t *testing.T) {
	t.Parallel()
	u, g := newChat(t, "")
	key, _ := g.Key(t, nil)
	if r := g.Do(t, "POST", "/chat/completions", key, hi(map[string]any{"provider": map[string]any{"order": []any{"second"}}})); r.Status != 200 ||
		r.JSON(t)["provider"] != "second" || u.first.Calls() != 0 {
		t.Fatalf("order: %d %s", r.Status, r.Body)
	}
	u.first.Script(fakes.Step{Status: 500, Body: fakes.OpenAIServerError})
	harness.AssertError(t, g.Do(t, "POST", "/chat/completions", key, hi(map[string]any{"provider": map[string]any{"allow_fallbacks": false}})), 502)
	if u.second.Calls() != 1 {
		t.Fatalf("fell back against allow_fallbacks: %d calls", u.second.Calls())
	}
	e := harness.AssertError(t, g.Do(t, "POST", "/chat/completions", key, hi(map[string]any{"provider": map[string]any{"only": []any{"nope"}}})), 404)
	if !strings.Contains(fmt.Sprint(e["message"]), "provider") {
		t.Fatalf("404: %v", e)
	}
}

// TestChatModelsFallback: the models list is tried in order — model first when it is set — each model a call of
// its own, admitted by the guardrails on its own, until one answers before its first token.
func TestChatModelsFallback(t *testing.T) {
	t.Parallel()
	u, g := newChat(t, `  - {id: solo, modality: chat, endpoints: [{provider: first, upstream_model: up-solo, pricing: {per_million_prompt_tokens: 1, per_million_completion_tokens: 1}}]}
  - {id: alt, modality: chat, endpoints: [{provider: second, upstream_model: up-alt, pricing: {per_million_prompt_tokens: 1, per_million_completion_tokens: 1}}]}`)
	key, _ := g.Key(t, nil)
	railed, hash := g.Key(t, nil)
	r := g.Do(t, "POST", "/guardrails", g.Admin, `{"name":"alt only","allowed_models":["alt"]}`)
	gr := r.JSON(t)["data"].(map[string]any)["id"].(string)
	if r := g.Do(t, "POST", "/guardrails/"+gr+"/assignments/keys", g.Admin, map[string]any{"key_hashes": []string{hash}}); r.Status != 200 {
		t.Fatalf("assign: %d %s", r.Status, r.Body)
	}
	fail := fakes.Step{Status: 500, Body: fakes.OpenAIServerError}
	for _, tc := range []struct {
		name          string
		key           string
		first, second []fakes.Step
		body          map[string]any
		status        int
		model         string // the model that answered
		calls         [2]int // calls each fake got
		field         string // the field a 400 names
	}{
		{name: "first model's upstream fails", key: key, first: []fakes.Step{fail}, body: hi(map[string]any{"model": nil, "models": []string{"solo", "alt"}}),
			status: 200, model: "alt", calls: [2]int{1, 1}},
		{name: "streamed", key: key, first: []fakes.Step{fail}, body: hi(map[string]any{"model": nil, "models": []string{"solo", "alt"}, "stream": true}),
			status: 200, model: "alt", calls: [2]int{1, 1}},
		{name: "model is tried before models", key: key, first: []fakes.Step{fail}, body: hi(map[string]any{"model": "solo", "models": []string{"alt"}}),
			status: 200, model: "alt", calls: [2]int{1, 1}},
		{name: "first model answers", key: key, body: hi(map[string]any{"model": "solo", "models": []string{"alt", "solo"}}),
			status: 200, model: "solo", calls: [2]int{1, 0}},
		{name: "unknown model", key: key, body: hi(map[string]any{"model": nil, "models": []string{"nope", "alt"}}),
			status: 200, model: "alt", calls: [2]int{0, 1}},
		{name: "not allowed by a guardrail", key: railed, body: hi(map[string]any{"model": nil, "models": []string{"solo", "alt"}}),
			status: 200, model: "alt", calls: [2]int{0, 1}},
		{name: "all fail", key: key, first: []fakes.Step{fail}, second: []fakes.Step{fail}, body: hi(map[string]any{"model": "solo", "models": []string{"alt"}}),
			status: 502, calls: [2]int{1, 1}},
		{name: "caller's 400", key: key, body: hi(map[string]any{"model": nil, "models": []string{"solo", "alt"}, "temperature": 3}),
			status: 400, field: "temperature"},
		{name: "a model of another modality", key: key, body: hi(map[string]any{"model": nil, "models": []string{"tts", "alt"}}),
			status: 400, field: "model"},
		{name: "too many models", key: key, body: hi(map[string]any{"models": []string{"a", "b", "c", "d"}}), status: 400, field: "models"},
		{name: "empty model", key: key, body: hi(map[string]any{"model": nil, "models": []string{""}}), status: 400, field: "models[0]"},
		{name: "no model at all", key: key, body: hi(map[string]any{"model": nil, "models": []string{}}), status: 400, field: "model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u.first.Script(tc.first...)
			u.second.Script(tc.second...)
			before := [2]int{u.first.Calls(), u.second.Calls()}
			r := g.Do(t, "POST", "/chat/completions", tc.key, tc.body)
			if got := [2]int{u.first.Calls() - before[0], u.second.Calls() - before[1]}; got != tc.calls {
				t.Errorf("upstream calls %v, want %v", got, tc.calls)
			}
			if tc.status != 200 {
				e := harness.AssertError(t, r, tc.status)
				if !strings.Contains(fmt.Sprint(e["message"]), tc.field) {
					t.Errorf("message %q does not name %s", e["message"], tc.field)
				}
				return
			}
			if r.Status != 200 {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			if tc.body["stream"] == nil && r.JSON(t)["model"] != tc.model {
				t.Errorf("answer's model %v, want %s", r.JSON(t)["model"], tc.model)
			}
			if tc.body["stream"] != nil && !strings.Contains(events(t, r.Body)[0], `"model":"`+tc.model+`"`) {
				t.Errorf("stream's model: %v", events(t, r.Body))
			}
			if rec := generationOf(t, g, r); rec["model"] != tc.model {
				t.Errorf("record's model %v, want %s", rec["model"], tc.model)
			}
		})
	}
}

// TestChatPresetModels: a preset may carry the models to use — a model and a models fallback list. The preset's
// are used when the request names none; when the request names its own (model or models), those are the models
// tried and the preset's are left out: the request wins.
func TestChatPresetModels(t *testing.T) {
	t.Parallel()
	u, g := newChat(t, `  - {id: solo, modality: chat, endpoints: [{provider: first, upstream_model: up-solo, pricing: {per_million_prompt_tokens: 1, per_million_completion_tokens: 1}}]}
  - {id: alt, modality: chat, endpoints: [{provider: second, upstream_model: up-alt, pricing: {per_million_prompt_tokens: 1, per_million_completion_tokens: 1}}]}`)
	key, _ := g.Key(t, nil)
	system := []any{map[string]any{"role": "system", "content": "Be brief."}}
	for slug, config := range map[string]map[string]any{
		"listed": {"models": []string{"solo", "alt"}, "messages": system},
		"both":   {"model": "solo", "models": []string{"alt"}, "messages": system},
	} {
		if r := g.Do(t, "POST", "/presets/"+slug+"/chat/completions", key, config); r.Status != 200 {
			t.Fatalf("preset %s: %d %s", slug, r.Status, r.Body)
		}
	}
	fail := fakes.Step{Status: 500, Body: fakes.OpenAIServerError}
	for _, tc := range []struct {
		name          string
		body          map[string]any
		first, second []fakes.Step
		status        int
		model         string // the model that answered
		calls         [2]int // calls each fake got
	}{
		{name: "the preset's list", body: hi(map[string]any{"model": "@preset/listed"}), status: 200, model: "solo", calls: [2]int{1, 0}},
		{name: "the preset's list falls back", body: hi(map[string]any{"model": "@preset/listed"}), first: []fakes.Step{fail},
			status: 200, model: "alt", calls: [2]int{1, 1}},
		{name: "the preset's model, then its list", body: hi(map[string]any{"model": nil, "preset": "both"}), first: []fakes.Step{fail},
			status: 200, model: "alt", calls: [2]int{1, 1}},
		{name: "the request's models win", body: hi(map[string]any{"model": nil, "preset": "both", "models": []string{"alt"}}),
			status: 200, model: "alt", calls: [2]int{0, 1}},
		{name: "the request's model wins, without the preset's list", body: hi(map[string]any{"model": "alt@preset/listed"}),
			second: []fakes.Step{fail}, status: 502, calls: [2]int{0, 1}},
		{name: "the request's model and models", body: hi(map[string]any{"model": "alt@preset/both", "models": []string{"solo"}}),
			second: []fakes.Step{fail}, status: 200, model: "solo", calls: [2]int{1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u.first.Script(tc.first...)
			u.second.Script(tc.second...)
			before := [2]int{u.first.Calls(), u.second.Calls()}
			r := g.Do(t, "POST", "/chat/completions", key, tc.body)
			if got := [2]int{u.first.Calls() - before[0], u.second.Calls() - before[1]}; got != tc.calls {
				t.Errorf("upstream calls %v, want %v", got, tc.calls)
			}
			if tc.status != 200 {
				harness.AssertError(t, r, tc.status)
				return
			}
			if r.Status != 200 || r.JSON(t)["model"] != tc.model {
				t.Fatalf("%d %s, want model %s", r.Status, r.Body, tc.model)
			}
			if rec := generationOf(t, g, r); rec["model"] != tc.model || rec["preset_id"] == nil {
				t.Errorf("record: model %v, preset %v", rec["model"], rec["preset_id"])
			}
		})
	}
}

// TestChatUserNotForwarded: the caller's end-user id (user) is kept on the generation record and, as in the
// reference, not sent to the provider, whichever protocol it speaks.
func TestChatUserNotForwarded(t *testing.T) {
	t.Parallel()
	oai, ant, gem := fakes.NewOpenAI(t, "sk-1"), fakes.NewAnthropic(t, "sk-ant"), fakes.NewGemini(t, "g-key")
	g := harness.Start(t, harness.WithConfig(fmt.Sprintf(`providers:
  - {slug: openai, kind: openai, base_url: %s, api_key: sk-1}
  - {slug: anthropic, kind: anthropic, base_url: %s, api_key: sk-ant}
  - {slug: gemini, kind: google-ai-studio, base_url: %s, api_key: g-key}
models:
  - {id: gpt, modality: chat, endpoints: [{provider: openai, upstream_model: up-1}]}
  - {id: claude, modality: chat, endpoints: [{provider: anthropic, upstream_model: claude-x}]}
  - {id: gemini, modality: chat, endpoints: [{provider: gemini, upstream_model: gemini-x}]}
`, oai.BaseURL(), ant.BaseURL(), gem.BaseURL())))
	key, _ := g.Key(t, nil)
	for _, tc := range []struct {
		model string
		fake  *fakes.Fake
	}{{"gpt", oai.Fake}, {"claude", ant.Fake}, {"gemini", gem.Fake}} {
		t.Run(tc.model, func(t *testing.T) {
			for _, stream := range []bool{false, true} {
				r := g.Do(t, "POST", "/chat/completions", key, hi(map[string]any{"model": tc.model, "user": "end-user-7", "stream": stream}))
				if r.Status != 200 {
					t.Fatalf("%d %s", r.Status, r.Body)
				}
				reqs := tc.fake.Requests()
				if sent := reqs[len(reqs)-1].Body; bytes.Contains(sent, []byte("end-user-7")) {
					t.Fatalf("the end-user id went upstream: %s", sent)
				}
				if rec := generationOf(t, g, r); rec["external_user"] != "end-user-7" {
					t.Fatalf("record's external_user %v", rec["external_user"])
				}
			}
		})
	}
}

// TestChatGeminiRefusal: a conversation Gemini refuses (a tool's result naming no function) is not sent to it;
// the model's next endpoint takes it, and when Gemini is its only one the caller gets a 400 naming the field.
func TestChatGeminiRefusal(t *testing.T) {
	t.Parallel()
	oai, gem := fakes.NewOpenAI(t, "sk-1"), fakes.NewGemini(t, "g-key")
	g := harness.Start(t, harness.WithConfig(fmt.Sprintf(`providers:
  - {slug: openai, kind: openai, base_url: %s, api_key: sk-1}
  - {slug: gemini, kind: google-ai-studio, base_url: %s, api_key: g-key}
models:
  - {id: both, modality: chat, endpoints: [{provider: gemini, upstream_model: gemini-x}, {provider: openai, upstream_model: up-1}]}
  - {id: gemini, modality: chat, endpoints: [{provider: gemini, upstream_model: gemini-x}]}
`, oai.BaseURL(), gem.BaseURL())))
	key, _ := g.Key(t, nil)
	msgs := []any{map[string]any{"role": "user", "content": "Look"}, map[string]any{"role": "tool", "tool_call_id": "c9", "content": "x"}}
	for _, tc := range []struct {
		model          string
		openai, status int
	}{{"both", 1, 200}, {"gemini", 0, 400}} {
		t.Run(tc.model, func(t *testing.T) {
			before := [2]int{gem.Calls(), oai.Calls()}
			r := g.Do(t, "POST", "/chat/completions", key, map[string]any{"model": tc.model, "messages": msgs})
			if got := [2]int{gem.Calls() - before[0], oai.Calls() - before[1]}; got != [2]int{0, tc.openai} {
				t.Errorf("upstream calls (gemini, openai) %v", got)
			}
			if tc.status == 200 {
				if r.Status != 200 {
					t.Fatalf("%d %s", r.Status, r.Body)
				}
				return
			}
			e := harness.AssertError(t, r, 400)
			if msg, _ := e["message"].(string); !strings.HasPrefix(msg, "messages[1].tool_call_id: ") {
				t.Errorf("message %q, want it to name messages[1].tool_call_id", msg)
			}
		})
	}
}

// TestChatPresetBounds: a request laid over a preset is held to the bound on a body the server holds the caller's
// own to (server.max_body_bytes, 4 KiB here): a preset of 3 KiB, and a request of 3 KiB, each within it, are a
// 400 together, naming the field that named the preset, and no upstream is called; the same preset with a short
// request is taken. The bytes counted are those sent: a preset's <, & and > as they are (not json.Marshal's
// \u003c, six bytes for one), and its system prompt only when it is laid, not under a system message of the
// request's own.
func TestChatPresetBounds(t *testing.T) {
	t.Parallel()
	u, g := newChat(t, "server: {max_body_bytes: 4096}\n")
	key, _ := g.Key(t, nil)
	if r := g.Do(t, "POST", "/presets/large/chat/completions", key, map[string]any{"model": "chat",
		"metadata": map[string]any{"note": strings.Repeat("n", 3000)}}); r.Status != 200 {
		t.Fatalf("preset: %d %s", r.Status, r.Body)
	}
	long := map[string]any{"model": "@preset/large", "messages": []any{map[string]any{"role": "user", "content": strings.Repeat("w ", 1500)}}}
	if r := g.Do(t, "POST", "/chat/completions", key, hi(map[string]any{"model": nil, "preset": "large"})); r.Status != 200 {
		t.Fatalf("a short request under the preset: %d %s", r.Status, r.Body)
	}
	calls := u.first.Calls()
	e := harness.AssertError(t, g.Do(t, "POST", "/chat/completions", key, long), 400)
	if msg := fmt.Sprint(e["message"]); !strings.HasPrefix(msg, "model: ") || !strings.Contains(msg, "together") ||
		e["metadata"].(map[string]any)["field"] != "model" {
		t.Fatalf("the preset and the request past the bound: %v", e)
	}
	if u.first.Calls() != calls {
		t.Fatal("the request reached the upstream")
	}

	note := strings.Repeat("<&>", 1000)
	if r := g.Do(t, "POST", "/presets/html/chat/completions", key, `{"model":"chat","metadata":{"note":"`+note+`"}}`); r.Status != 200 {
		t.Fatalf("preset: %d %s", r.Status, r.Body)
	}
	if r := g.Do(t, "POST", "/chat/completions", key, hi(map[string]any{"model": "@preset/html"})); r.Status != 200 {
		t.Fatalf("a short request under a preset of <, & and >: %d %s", r.Status, r.Body)
	}
	reqs := u.first.Requests()
	var sent struct {
		Metadata struct{ Note string } `json:"metadata"`
	}
	if err := json.Unmarshal(reqs[len(reqs)-1].Body, &sent); err != nil || sent.Metadata.Note != note {
		t.Fatalf("the preset's note went upstream as %q (%v)", sent.Metadata.Note, err)
	}

	if r := g.Do(t, "POST", "/presets/prompted/chat/completions", key, map[string]any{"model": "chat",
		"messages": []any{map[string]any{"role": "system", "content": strings.Repeat("p", 3000)}}}); r.Status != 200 {
		t.Fatalf("preset: %d %s", r.Status, r.Body)
	}
	user := map[string]any{"role": "user", "content": strings.Repeat("w ", 750)}
	if r := g.Do(t, "POST", "/chat/completions", key, map[string]any{"model": "@preset/prompted",
		"messages": []any{map[string]any{"role": "system", "content": "mine"}, user}}); r.Status != 200 {
		t.Fatalf("a request with a system message of its own under a 3 KiB prompt: %d %s", r.Status, r.Body)
	}
	calls = u.first.Calls()
	e = harness.AssertError(t, g.Do(t, "POST", "/chat/completions", key, map[string]any{"model": "@preset/prompted",
		"messages": []any{user}}), 400)
	if meta := e["metadata"].(map[string]any); e["message"] != `model: preset "prompted" and the request have more than 4096 bytes together` ||
		meta["field"] != "model" || jsonString(meta["max_bytes"]) != "4096" {
		t.Fatalf("the prompt laid past the bound: %v", e)
	}
	if u.first.Calls() != calls {
		t.Fatal("the request reached the upstream")
	}
}
