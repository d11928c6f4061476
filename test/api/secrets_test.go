package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/test/fakes"
	"github.com/switchboard-ai/switchboard/test/harness"
	"github.com/switchboard-ai/switchboard/test/logsink"
)

// TestNoSecretInLogs drives every kind of request, at debug level, and checks that no key, no key's hash, no
// provider key and no prompt appears in the logs — SQL is logged with placeholders only (a GET /keys logged its
// usage query with every listed key's hash inlined), a path that holds a hash or a key is logged redacted — and
// that every line is in the configured format (JSON here).
func TestNoSecretInLogs(t *testing.T) {
	t.Parallel()
	var logs logsink.Buffer
	u := newUpstreams(t)
	g := harness.Start(t, harness.WithLog(&logs), harness.WithConfig(u.config("openai")))
	secret, hash := g.Key(t, nil)
	_, otherHash := g.Key(t, nil)
	const prompt = "a prompt nobody else may read"
	g.Do(t, "GET", "/key", secret, nil)
	g.Do(t, "GET", "/keys", secret, nil)
	g.Do(t, "GET", "/keys", g.Admin, nil)
	g.Do(t, "GET", "/keys/"+hash, g.Admin, nil)
	g.Do(t, "PATCH", "/keys/"+hash, g.Admin, `{"name":`)
	g.Do(t, "PATCH", "/keys/"+otherHash, g.Admin, `{"name":"renamed"}`)
	g.Do(t, "GET", "/keys/"+hash+"/nothing", g.Admin, nil)
	g.Do(t, "GET", "/"+secret, "", nil)
	g.Do(t, "GET", "/keys", "sk-sb-v1-wrong-secret-value", nil)
	if r := speak(t, g, secret, map[string]any{"input": prompt}); r.Status != 200 {
		t.Fatalf("speech: %d %s", r.Status, r.Body)
	}
	generationOf(t, g, speak(t, g, secret, map[string]any{"input": prompt}))
	out := logs.String()
	if !strings.Contains(out, `"request_id"`) || !strings.Contains(out, `"msg":"query"`) {
		t.Fatalf("no request or query logs captured: %q", out)
	}
	for _, s := range []string{secret, g.Admin, "sk-sb-v1-wrong-secret-value", secret[len(secret)-20:], hash, otherHash,
		hash[:32], "sk-up", prompt} {
		if strings.Contains(out, s) {
			t.Fatalf("%q reached the logs", s)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !json.Valid([]byte(line)) {
			t.Fatalf("a log line not in the configured format (JSON): %q", line)
		}
	}
}

// TestUpstreamErrorsNeverRelayTheGatewaysKey: a provider that echoes the credential the gateway sent in its
// error text (a 400 that reaches the caller, a 500 that the gateway logs and stores) never gets it to the
// caller, a log line or stored content: neither the configured key verbatim (even when not shaped like a key)
// nor anything shaped like a secret.
func TestUpstreamErrorsNeverRelayTheGatewaysKey(t *testing.T) {
	t.Parallel()
	const key, plain, shaped = "sk-gateway-0123456789abcdefghij", "hunter2hunter2", "AIzaSyA0123456789abcdefghijklmnopqrstuv"
	echo := func(status int) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			auth := r.Header.Get("Authorization")
			msg := fmt.Sprintf("you sent Authorization: %s, that is %s; x-goog-api-key %s", auth, strings.TrimPrefix(auth, "Bearer "), shaped)
			b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error",
				"auth": strings.TrimPrefix(auth, "Bearer ")}})
			_, _ = w.Write(b)
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	rejects, fails := echo(http.StatusBadRequest), echo(http.StatusInternalServerError)
	var logs logsink.Buffer
	g := harness.Start(t, harness.WithLog(&logs), harness.WithConfig(fmt.Sprintf(`providers:
  - {slug: rejects, kind: openai, base_url: %s, api_key: %s, timeout: 1s}
  - {slug: fails, kind: openai, base_url: %s, api_key: %s, timeout: 1s}
models:
  - {id: tts, modality: tts, endpoints: [{provider: rejects, upstream_model: tts-1}]}
  - {id: tts-down, modality: tts, endpoints: [{provider: fails, upstream_model: tts-1}]}
  - {id: chat, modality: chat, endpoints: [{provider: rejects, upstream_model: c-1}]}
`, rejects.URL, key, fails.URL, plain)))
	infer, _ := g.Key(t, nil)
	var answers []harness.Response
	for _, call := range []struct {
		path, model string
		status      int
	}{{"/audio/speech", "tts", 400}, {"/audio/speech", "tts-down", 502}, {"/chat/completions", "chat", 400}} {
		body := map[string]any{"model": call.model, "input": "hi", "voice": "alloy",
			"messages": []any{map[string]any{"role": "user", "content": "hi"}}}
		r := g.Do(t, "POST", call.path, infer, body)
		harness.AssertError(t, r, call.status)
		answers = append(answers, r)
		id := r.Header.Get("X-Generation-Id")
		if id == "" {
			t.Fatalf("%s %s: no X-Generation-Id", call.path, call.model)
		}
		var content harness.Response
		harness.Eventually(t, 5*time.Second, func() bool {
			content = g.Do(t, "GET", "/generation/content?id="+id, g.Admin, nil)
			return content.Status == 200
		})
		if !strings.Contains(string(content.Body), "[REDACTED]") {
			t.Errorf("%s: stored content keeps no scrubbed upstream text: %s", call.model, content.Body)
		}
		answers = append(answers, content)
	}
	for _, s := range []string{key, plain, shaped, "0123456789abcdefghij"} {
		for _, a := range answers {
			if strings.Contains(string(a.Body), s) {
				t.Errorf("%q reached a caller: %s", s, a.Body)
			}
		}
		if strings.Contains(logs.String(), s) {
			t.Errorf("%q reached the logs", s)
		}
	}
}

// TestCompletionsNeverCarryTheGatewaysKey: an upstream that writes the credential the gateway sent it into its
// completion — whole, or cut across two chunks, in the text and in a tool call's arguments — gets it neither to the
// caller (streamed or not) nor to stored content, on each chat provider; the rest of the answer comes through.
func TestCompletionsNeverCarryTheGatewaysKey(t *testing.T) {
	t.Parallel()
	const key = "sk-gateway-0123456789abcdefghij"
	oai, ant, gem := fakes.NewOpenAI(t, key), fakes.NewAnthropic(t, key), fakes.NewGemini(t, key)
	g := harness.Start(t, harness.WithConfig(fmt.Sprintf(`providers:
  - {slug: openai, kind: openai, base_url: %s, api_key: %s}
  - {slug: anthropic, kind: anthropic, base_url: %s, api_key: %s}
  - {slug: gemini, kind: google-ai-studio, base_url: %s, api_key: %s}
models:
  - {id: chat/openai, modality: chat, endpoints: [{provider: openai, upstream_model: c-1}]}
  - {id: chat/anthropic, modality: chat, endpoints: [{provider: anthropic, upstream_model: c-1}]}
  - {id: chat/gemini, modality: chat, endpoints: [{provider: gemini, upstream_model: c-1}]}
`, oai.BaseURL(), key, ant.BaseURL(), key, gem.BaseURL(), key)))
	infer, _ := g.Key(t, nil)
	cut := len(key) / 2
	events := map[string][]string{
		"openai": {openAIText("Your key: "+key[:cut], ""), openAIText(key[cut:]+"; mine: "+key, ""),
			openAIEvent(`[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"k\":\"`+key[:5]+`"}}]},"finish_reason":null}]`, ""),
			openAIEvent(`[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"`+key[5:]+`\"}"}}]},"finish_reason":"tool_calls"}]`, ""),
			"data: [DONE]\n\n"},
		"anthropic": {
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n",
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Your key: " + key[:cut] + "\"}}\n\n",
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" + key[cut:] + "; mine: " + key + "\"}}\n\n",
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":9}}\n\n",
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"},
		"gemini": {
			`data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Your key: ` + key[:cut] + `"}]}}]}` + "\r\n\r\n",
			`data: {"candidates":[{"content":{"role":"model","parts":[{"text":"` + key[cut:] + `; mine: ` + key + `"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":9}}` + "\r\n\r\n"},
	}
	for provider, fake := range map[string]*fakes.Fake{"openai": oai.Fake, "anthropic": ant.Fake, "gemini": gem.Fake} {
		for _, stream := range []bool{false, true} {
			fake.Script(fakes.Step{Events: events[provider]})
			r := g.Do(t, "POST", "/chat/completions", infer, map[string]any{"model": "chat/" + provider, "stream": stream,
				"messages": []any{map[string]any{"role": "user", "content": "What is your key?"}}})
			if r.Status != 200 {
				t.Fatalf("%s (stream %v): %d %s", provider, stream, r.Status, r.Body)
			}
			text, _ := streamed(t, bytes.NewReader(r.Body))
			if !stream {
				text = r.JSON(t)["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"].(string)
			}
			if text != "Your key: [REDACTED]; mine: [REDACTED]" {
				t.Fatalf("%s (stream %v): the answer came as %q", provider, stream, text)
			}
			stored := contentOf(t, g, generationOf(t, g, r))
			for _, where := range []string{string(r.Body), fmt.Sprint(stored)} {
				if strings.Contains(where, key) || strings.Contains(where, key[cut:]) {
					t.Fatalf("%s (stream %v): the gateway's key reached the caller or storage: %s", provider, stream, where)
				}
			}
		}
	}
}
