package openai

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/adapters/inbound/chatcompletions"
	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/ports"
)

// referenceBody is the body as encoding/json built it from a map of the fields (before chatBody): what chatBody's
// must decode the same as.
func referenceBody(req ports.ChatRequest) ([]byte, error) {
	body := map[string]any{}
	for k, v := range req.Options {
		body[k] = v
	}
	for k, v := range req.Request.Extra {
		body[k] = json.RawMessage(v)
	}
	if req.Request.MaxTokens == nil && !chat.OptionCapped(req.Options, "max_tokens", "max_completion_tokens") {
		delete(body, "max_tokens")
		body["max_completion_tokens"] = int64(chat.DefaultMaxTokens)
	}
	msgs := make([]any, len(req.Request.Messages))
	for i, m := range req.Request.Messages {
		w := map[string]any{"role": m.Role}
		switch {
		case m.Null:
			w["content"] = nil
		case m.Text:
			w["content"] = m.Joined()
		default:
			parts := make([]any, len(m.Content))
			for j, p := range m.Content {
				switch p.Type {
				case "text":
					parts[j] = map[string]any{"type": "text", "text": p.Text}
				case "image_url":
					img := map[string]any{"url": p.ImageURL}
					if p.Detail != "" {
						img["detail"] = p.Detail
					}
					parts[j] = map[string]any{"type": "image_url", "image_url": img}
				default:
					parts[j] = json.RawMessage(p.Raw)
				}
			}
			w["content"] = parts
		}
		if m.Name != "" {
			w["name"] = m.Name
		}
		if m.ToolCallID != "" {
			w["tool_call_id"] = m.ToolCallID
		}
		var calls []any
		for _, tc := range m.ToolCalls {
			calls = append(calls, map[string]any{"id": tc.ID, "type": "function",
				"function": map[string]any{"name": tc.Name, "arguments": tc.Arguments}})
		}
		if calls != nil {
			w["tool_calls"] = calls
		}
		msgs[i] = w
	}
	body["model"] = req.UpstreamModel
	body["messages"] = msgs
	body["stream"] = true
	body["stream_options"] = map[string]any{"include_usage": true}
	return json.Marshal(body)
}

// TestChatBody holds the body appended by hand to the one encoding/json built: the same JSON, whatever the
// messages, the caller's own fields (spaces and all) and the options.
func TestChatBody(t *testing.T) {
	for _, tc := range []struct {
		body string
		opts map[string]any
	}{
		{body: `{"model":"bench/chat","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Write two hundred words."}]}`},
		{body: `{"model":"m","messages":[{"role":"system","content":"be <brief> & \"kind\"\u2028"},{"role":"user","name":"ann","content":[` +
			`{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"https://x/a.png","detail":"low"}},` +
			`{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}},{"type":"input_audio","input_audio":{"data":"QQ==", "format" : "wav"}}]},` +
			`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},` +
			`{"role":"tool","tool_call_id":"call_1","content":"é😀\u001f"},{"role":"user","content":[]}]}`},
		{body: `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":null,"logit_bias": {"50256" : -100},"top_k":3,` +
			`"seed":1234567890123456789,"response_format":{"type":"json_object"},"x<&>":"<b>","ключ":[1, 2.50, true, null]}`,
			opts: map[string]any{"top_k": json.Number("9"), "min_p": 0.1, "model": "other", "stream": false, "seed": json.Number("1"),
				"nested": map[string]any{"a": []any{"<", json.Number("1e3")}}}},
		{body: `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":9,"max_completion_tokens":null}`,
			opts: map[string]any{"max_completion_tokens": json.Number("20")}},
		{body: `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":7}`,
			opts: map[string]any{"max_tokens": json.Number("0")}},
		{body: `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, opts: map[string]any{"max_tokens": json.Number("0"),
			"max_completion_tokens": "many", "stream_options": map[string]any{}}},
		{body: `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, opts: map[string]any{"max_tokens": 20000.0}},
	} {
		req := parsed(t, tc.body, tc.opts)
		req.UpstreamModel = "up-<model>"
		got, err := chatBody(req)
		if err != nil {
			t.Fatal(err)
		}
		want, err := referenceBody(req)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := decodeAny(t, got), decodeAny(t, want); !reflect.DeepEqual(g, w) {
			t.Errorf("%s:\n got %s\nwant %s", tc.body, got, want)
		}
	}
}

// parsed is the call to the upstream "up" of a chat request's body and the provider's options.
func parsed(t testing.TB, raw string, opts map[string]any) ports.ChatRequest {
	t.Helper()
	body, err := chatcompletions.Decode([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	r, err := body.Request()
	if err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return ports.ChatRequest{UpstreamModel: "up", Request: r, Options: opts}
}

func decodeAny(t *testing.T, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return v
}

// TestChatBodyGatewayFieldsWin holds the fields the gateway writes against a caller's option that names them in
// another case (or by Unicode's folding): an upstream that decodes with encoding/json (Ollama) matches keys so and
// takes the last, so the gateway's model, messages, stream and default limit must come last. (Such a field of the
// request itself is refused by its wire format, chatcompletions.)
func TestChatBodyGatewayFieldsWin(t *testing.T) {
	const body = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	for _, opts := range []map[string]any{
		{"Model": "costly", "MESSAGES": []any{}, "Stream": false, "STREAM_OPTIONS": map[string]any{"include_usage": false},
			"Max_Completion_Tokens": json.Number("1000000")},
		{"meſſages": []any{}, "ſtream": false},
		{"MODEL": "costly", "Stream": false, "MAX_COMPLETION_TOKENS": json.Number("1000000")},
	} {
		got, err := chatBody(parsed(t, body, opts))
		if err != nil {
			t.Fatal(err)
		}
		var up struct {
			Model         string
			Messages      []json.RawMessage
			Stream        bool
			StreamOptions struct {
				IncludeUsage bool `json:"include_usage"`
			} `json:"stream_options"`
			MaxCompletionTokens int64 `json:"max_completion_tokens"`
		}
		if err := json.Unmarshal(got, &up); err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		if up.Model != "up" || len(up.Messages) != 1 || !up.Stream || !up.StreamOptions.IncludeUsage ||
			up.MaxCompletionTokens != chat.DefaultMaxTokens {
			t.Errorf("%s: an upstream decoding with encoding/json reads %+v", got, up)
		}
	}
}

// TestChatBodyLimitSpellings: a caller's option that spells a completion limit or n otherwise (MAX_TOKENS,
// max_tokenſ, N, max_completıon_tokens, n followed by a NUL) is not sent. The gateway reads the limits by their
// names only, and reserves the call's budget for what they say (or for the default); an upstream that decodes as
// encoding/json does reads such a field as the limit, the default's max_completion_tokens or the caller's
// max_tokens notwithstanding, and one that compares each letter's upper case (.NET's) or reads a key up to a NUL
// (C's) reads the others so. (Such a field of the request itself is refused by its wire format, chatcompletions.)
func TestChatBodyLimitSpellings(t *testing.T) {
	const msgs = `"model":"m","messages":[{"role":"user","content":"hi"}]`
	million := json.Number("1000000")
	for _, tc := range []struct {
		body                  string
		opts                  map[string]any
		maxTokens, completion int64 // as the upstream reads them: 0 for none
		n                     int64
	}{
		{body: `{` + msgs + `}`, opts: map[string]any{"MAX_TOKENS": million}, completion: chat.DefaultMaxTokens},
		{body: `{` + msgs + `}`, opts: map[string]any{"max_tokenſ": million}, completion: chat.DefaultMaxTokens},
		{body: `{` + msgs + `}`, opts: map[string]any{"Max_Tokens": million}, completion: chat.DefaultMaxTokens},
		{body: `{` + msgs + `,"max_tokens":10}`, opts: map[string]any{"max_tokenſ": million, "MAX_TOKENS": million}, maxTokens: 10},
		{body: `{` + msgs + `,"max_completion_tokens":10}`, opts: map[string]any{"max_completion_tokenſ": million}, completion: 10},
		{body: `{` + msgs + `,"max_tokens":10}`, opts: map[string]any{"max_completion_tokenſ": million}, maxTokens: 10},
		{body: `{` + msgs + `,"max_tokens":10,"n":1}`, opts: map[string]any{"N": json.Number("5")}, maxTokens: 10, n: 1},
		{body: `{` + msgs + `,"max_tokens":10}`, opts: map[string]any{"N": json.Number("5")}, maxTokens: 10},
		{body: `{` + msgs + `}`, opts: map[string]any{"max_completıon_tokens": million, "max_tokens\x00": million},
			completion: chat.DefaultMaxTokens},
		{body: `{` + msgs + `,"max_tokens":10}`, opts: map[string]any{"n\x00": json.Number("5")}, maxTokens: 10},
	} {
		got, err := chatBody(parsed(t, tc.body, tc.opts))
		if err != nil {
			t.Fatal(err)
		}
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(got, &keys); err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		for k := range tc.opts {
			if _, ok := keys[k]; ok {
				t.Errorf("%s: the option %q was sent", got, k)
			}
		}
		var up struct {
			MaxTokens           int64 `json:"max_tokens"`
			MaxCompletionTokens int64 `json:"max_completion_tokens"`
			N                   int64 `json:"n"`
		}
		if err := json.Unmarshal(got, &up); err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		if up.MaxTokens != tc.maxTokens || up.MaxCompletionTokens != tc.completion || up.N != tc.n {
			t.Errorf("%s: an upstream decoding with encoding/json reads max_tokens %d, max_completion_tokens %d, n %d; "+
				"want %d, %d, %d", got, up.MaxTokens, up.MaxCompletionTokens, up.N, tc.maxTokens, tc.completion, tc.n)
		}
	}
}

// BenchmarkChatBody times a request's body for an OpenAI-compatible upstream, on the way to the first token: a
// typical call, and one with a prompt of 64 KiB.
func BenchmarkChatBody(b *testing.B) {
	for _, bc := range []struct{ name, body string }{
		{"typical", `{"model":"openai/gpt-4o-mini","stream":true,"temperature":0.7,"max_tokens":256,"messages":[` +
			`{"role":"system","content":"You are a helpful assistant. Answer briefly."},` +
			`{"role":"user","content":"What is the capital of France, and what is it known for?"}]}`},
		{"prompt64k", `{"model":"openai/gpt-4o-mini","stream":true,"messages":[{"role":"system","content":"You are a helpful assistant."},` +
			`{"role":"user","content":"` + strings.Repeat("The quick brown fox jumps over the lazy dog. ", 64<<10/45) + `"}]}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			req := parsed(b, bc.body, nil)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := chatBody(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
