package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/test/fakes"
	"github.com/switchboard-ai/switchboard/test/harness"
)

// openAIEvent is one chat.completion.chunk event of an OpenAI stream, with the given choices and usage (JSON, ""
// for none).
func openAIEvent(choices, usage string) string {
	ev := `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"up-1","choices":` + choices
	if usage != "" {
		ev += `,"usage":` + usage
	}
	return ev + "}\n\n"
}

// openAIText is a chunk event carrying text, and finish when it is not "".
func openAIText(text, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	b, _ := json.Marshal(text)
	return openAIEvent(`[{"index":0,"delta":{"content":`+string(b)+`},"finish_reason":`+f+`}]`, "")
}

// TestChatUsageBilling: what a chat call is billed, by the rule of docs/hardening.md. A usage the call could not
// have used — a prompt past twice the gateway's worst case of what was sent (plus 4,096 tokens), a completion past
// the larger of its limit and what was delivered, a count past the largest context window — is not taken: the call
// is billed at the gateway's estimate (four bytes a token of the prompt and of what was delivered), the record
// keeps the upstream's counts as its native ones and is flagged usage_implausible, and the metric counts it. A
// plausible usage is billed as the upstream counts it, above the call's reservation too. Without a usage, the
// estimate is never more than the reservation: an upstream that ignores the limit it was sent bills no more than
// the call was admitted for. Prices: 2 and 8 micro-dollars a prompt and a completion token; "Hi there" is 6 prompt
// tokens at four bytes a token, 12 at a token a byte (its reservation's), and max_tokens 10 makes the
// reservation 2×12 + 8×10 = 104.
func TestChatUsageBilling(t *testing.T) {
	t.Parallel()
	u, g := newChat(t, "")
	key, _ := g.Key(t, nil)
	words := strings.Repeat(" word", 400) // 2,000 bytes: 500 tokens at four bytes a token
	for _, tc := range []struct {
		name                       string
		events                     []string
		cost                       string // USD
		prompt, completion, native string // tokens billed, and the native prompt tokens kept
		flagged                    bool
	}{
		{"a plausible usage", []string{openAIText("Hi", "stop"), openAIEvent(`[]`, `{"prompt_tokens":9,"completion_tokens":1}`)},
			"0.000026", "9", "1", "9", false},
		{"a plausible usage past the reservation", []string{openAIText("Hi", "stop"), openAIEvent(`[]`, `{"prompt_tokens":100,"completion_tokens":1}`)},
			"0.000208", "100", "1", "100", false},
		{"a 9-byte prompt counted 9,999,999 tokens", []string{openAIText("Hi", "stop"), openAIEvent(`[]`, `{"prompt_tokens":9999999,"completion_tokens":1}`)},
			"0.00002", "6", "1", "9999999", true},
		{"a prompt past the largest context window", []string{openAIText("Hi", "stop"), openAIEvent(`[]`, `{"prompt_tokens":20000000,"completion_tokens":1}`)},
			"0.00002", "6", "1", "20000000", true},
		{"a completion past its limit and what was delivered", []string{openAIText("Hi", "stop"), openAIEvent(`[]`, `{"prompt_tokens":6,"completion_tokens":5000}`)},
			"0.00002", "6", "1", "6", true},
		{"a negative count", []string{openAIText("Hi", "stop"), openAIEvent(`[]`, `{"prompt_tokens":-6,"completion_tokens":1}`)},
			"0.00002", "6", "1", "-6", true},
		{"no usage, the limit ignored: the reservation", []string{openAIText(words, "stop")}, "0.000104", "6", "500", "6", false},
	} {
		for _, stream := range []bool{false, true} {
			u.first.Script(fakes.Step{Events: append(tc.events, "data: [DONE]\n\n")})
			r := g.Do(t, "POST", "/chat/completions", key, hi(map[string]any{"max_tokens": 10, "stream": stream}))
			if r.Status != 200 {
				t.Fatalf("%s: %d %s", tc.name, r.Status, r.Body)
			}
			rec := generationOf(t, g, r)
			flags := fmt.Sprint(rec["guardrail_flags"])
			if got := jsonString(rec["total_cost"]); got != tc.cost || jsonString(rec["tokens_prompt"]) != tc.prompt ||
				jsonString(rec["tokens_completion"]) != tc.completion || jsonString(rec["native_tokens_prompt"]) != tc.native ||
				strings.Contains(flags, generation.FlagUsageImplausible) != tc.flagged {
				t.Fatalf("%s (stream %v): cost %s, tokens %s+%s, native prompt %s, flags %s; want %s, %s+%s, %s, flagged %v", tc.name,
					stream, got, jsonString(rec["tokens_prompt"]), jsonString(rec["tokens_completion"]),
					jsonString(rec["native_tokens_prompt"]), flags, tc.cost, tc.prompt, tc.completion, tc.native, tc.flagged)
			}
		}
	}
	if n, _ := value(scrape(t, g), "switchboard_upstream_implausible_usage_total", map[string]string{"provider": "first", "model": "chat"}); n != 8 {
		t.Fatalf("switchboard_upstream_implausible_usage_total = %v, want 8 (four implausible usages, streamed and not)", n)
	}
}

// TestChatAnswerBounds: what an upstream can make the gateway hold for one answer is bounded. Past
// limits.max_answer_bytes an answer not streamed is a 502 (upstream_answer_too_large), recorded as failed and not
// billed, and a streamed one ends with an error event (502), billed for what was delivered; an answer not streamed
// that is not whole within limits.answer_timeout is a 524 (upstream_answer_timeout), while a streamed one whose
// first token came in time runs on.
func TestChatAnswerBounds(t *testing.T) {
	t.Parallel()
	u, g := newChat(t, "limits: {max_answer_bytes: 2000, answer_timeout: 1s}\n")
	key, _ := g.Key(t, nil)

	// The fake writes a thousand words (" w0 w1 ... w999": some 4,900 bytes) for max_tokens 1000.
	r := g.Do(t, "POST", "/chat/completions", key, hi(map[string]any{"max_tokens": 1000}))
	e := harness.AssertError(t, r, 502)
	rec := generationOf(t, g, r)
	if e["metadata"].(map[string]any)["reason"] != "upstream_answer_too_large" || rec["finish_reason"] != "error" ||
		failureOf(t, g, rec) != "502" || jsonString(rec["total_cost"]) != "0" {
		t.Fatalf("an answer past the bound, not streamed: %v; record finish %v, failure %s, cost %v", e, rec["finish_reason"],
			failureOf(t, g, rec), rec["total_cost"])
	}

	r = g.Do(t, "POST", "/chat/completions", key, hi(map[string]any{"max_tokens": 1000, "stream": true}))
	evs := events(t, r.Body)
	last := evs[len(evs)-1]
	if r.Status != 200 || len(evs) < 10 || !strings.Contains(last, `"error":{"code":502`) {
		t.Fatalf("an answer past the bound, streamed: %d, %d events, the last %s", r.Status, len(evs), last)
	}
	rec = generationOf(t, g, r)
	if rec["finish_reason"] != "error" || failureOf(t, g, rec) != "502" || jsonString(rec["total_cost"]) == "0" {
		t.Fatalf("record of a stream past the bound: finish %v, failure %s, cost %v", rec["finish_reason"], failureOf(t, g, rec), rec["total_cost"])
	}

	// Fifty words 50 ms apart: 2.5 s, past the 1 s the gateway waits for a whole answer.
	u.first.Script(fakes.Step{Gap: 50 * time.Millisecond})
	r = g.Do(t, "POST", "/chat/completions", key, hi(map[string]any{"max_tokens": 50}))
	e = harness.AssertError(t, r, 524)
	rec = generationOf(t, g, r)
	if e["metadata"].(map[string]any)["reason"] != "upstream_answer_timeout" || failureOf(t, g, rec) != "524" || jsonString(rec["total_cost"]) != "0" {
		t.Fatalf("an answer late, not streamed: %v; record failure %s, cost %v", e, failureOf(t, g, rec), rec["total_cost"])
	}
	u.first.Script(fakes.Step{Gap: 50 * time.Millisecond})
	r = g.Do(t, "POST", "/chat/completions", key, hi(map[string]any{"max_tokens": 50, "stream": true}))
	if evs := events(t, r.Body); r.Status != 200 || evs[len(evs)-1] != "[DONE]" {
		t.Fatalf("a streamed answer whose first token came in time was cut: %d, %v", r.Status, evs[len(evs)-1])
	}
	// Keep-alives every 50 ms and no token: the streamed answer has not begun within the 1 s, a 524.
	u.first.Script(fakes.Step{Gap: 50 * time.Millisecond, Events: slices.Repeat([]string{": keep-alive\n\n"}, 100)})
	r = g.Do(t, "POST", "/chat/completions", key, hi(map[string]any{"stream": true}))
	if e := harness.AssertError(t, r, 524); e["metadata"].(map[string]any)["reason"] != "upstream_timeout" ||
		!strings.Contains(e["message"].(string), "limits.answer_timeout") {
		t.Fatalf("a stream that never began: %s", r.Body)
	}
}

// TestChatStoredContentIsCut: an answer of more than generation.MaxText bytes reaches its caller whole, and is
// stored cut to its start with a note of how long it was, streamed or not.
func TestChatStoredContentIsCut(t *testing.T) {
	t.Parallel()
	u, g := newChat(t, "")
	key, _ := g.Key(t, nil)
	part := strings.Repeat("é", 300_000) // 600,000 bytes
	for _, stream := range []bool{false, true} {
		u.first.Script(fakes.Step{Events: []string{openAIText(part, ""), openAIText(part, ""), openAIText(part, "stop"), "data: [DONE]\n\n"}})
		r := g.Do(t, "POST", "/chat/completions", key, hi(map[string]any{"stream": stream}))
		var got string
		if stream {
			got, _ = streamed(t, bytes.NewReader(r.Body))
		} else {
			got = r.JSON(t)["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"].(string)
		}
		if r.Status != 200 || got != part+part+part {
			t.Fatalf("stream %v: %d, %d bytes delivered, want 1,800,000", stream, r.Status, len(got))
		}
		stored := contentOf(t, g, generationOf(t, g, r))["output"].(map[string]any)["completion"].(string)
		note := "\n[cut by the gateway: 1800000 bytes in all, the first "
		if len(stored) > generation.MaxText || !strings.Contains(stored, note) || !strings.HasPrefix(part+part, stored[:strings.Index(stored, note)]) {
			t.Fatalf("stream %v: stored %d bytes ending %q", stream, len(stored), stored[max(0, len(stored)-80):])
		}
	}
}

// TestRefusalsForTheWorstCaseSaySo: a call refused because its worst case (the estimate reserved before it) does
// not fit in what a budget has left says so, with the estimate and what is left, in its message and metadata — the
// key's limit (402), the organization's credits (402), a guardrail's budget (403) — where it read "this key has
// reached its spending limit" with $0.000052 spent of $1. The model's dearest endpoint prices "Hi there" with
// max_tokens 200,000 at 3×12 + 9×200,000 micro-dollars: $1.800036.
func TestRefusalsForTheWorstCaseSaySo(t *testing.T) {
	t.Parallel()
	_, g := newChat(t, "credits: {enabled: true}\n")
	if err := g.App.Credits.AddCredits(t.Context(), 1_500_000); err != nil {
		t.Fatal(err)
	}
	key, _ := g.Key(t, map[string]any{"limit": 1})
	if r := g.Do(t, "POST", "/chat/completions", key, hi(nil)); r.Status != 200 { // spends $0.000052 of the key's $1
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	harness.Eventually(t, 5*time.Second, func() bool {
		return jsonString(g.Do(t, "GET", "/key", key, nil).JSON(t)["data"].(map[string]any)["usage"]) == "0.000052"
	})
	check := func(r harness.Response, status int, reason, remaining string, says ...string) {
		t.Helper()
		e := harness.AssertError(t, r, status)
		meta := e["metadata"].(map[string]any)
		msg := e["message"].(string)
		if meta["reason"] != reason || jsonString(meta["estimate_usd"]) != "1.800036" || jsonString(meta["remaining_usd"]) != remaining ||
			!strings.Contains(msg, "may cost up to $1.800036") || !strings.Contains(msg, "$"+remaining+" is left") {
			t.Fatalf("%s: %s", reason, r.Body)
		}
		for _, s := range says {
			if !strings.Contains(msg, s) {
				t.Fatalf("%s: %q does not say %q", reason, msg, s)
			}
		}
	}
	big := hi(map[string]any{"max_tokens": 200_000})
	check(g.Do(t, "POST", "/chat/completions", key, big), 402, "key_limit_reached", "0.999948", "this key's limit of $1 cannot hold this call")

	free, freeHash := g.Key(t, nil)
	check(g.Do(t, "POST", "/chat/completions", free, big), 402, "insufficient_credits", "1.499948", "the organization's credits cannot hold this call", "switchboard credits add")

	r := g.Do(t, "POST", "/guardrails", g.Admin, `{"name":"budget","limit_usd":1.5,"reset_interval":"daily"}`)
	gr := r.JSON(t)["data"].(map[string]any)["id"].(string)
	if r := g.Do(t, "POST", "/guardrails/"+gr+"/assignments/keys", g.Admin, map[string]any{"key_hashes": []string{freeHash}}); r.Status != 200 {
		t.Fatalf("assign: %d %s", r.Status, r.Body)
	}
	if err := g.App.Credits.AddCredits(t.Context(), 10_000_000); err != nil {
		t.Fatal(err)
	}
	check(g.Do(t, "POST", "/chat/completions", free, big), 403, "guardrail_budget_exceeded", "1.5", "the daily budget of $1.5 starting", "cannot hold this call")
}
