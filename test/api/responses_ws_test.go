package api_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/switchboard-ai/switchboard/test/fakes"
	"github.com/switchboard-ai/switchboard/test/harness"
)

// TestResponsesWebSocketClientLeaves: a client that closes its WebSocket connection while a call of it runs ends
// that call at once, as a caller who leaves an HTTP call does: the upstream call is cancelled, the close is
// answered, and the record says the call was cancelled. Before the upstream's first byte and mid-stream, passed
// through to an upstream that speaks Responses and translated for one that speaks chat completions.
func TestResponsesWebSocketClientLeaves(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		model  string
		midway bool // the upstream's first events came before the client leaves
	}{
		{"resp/native", false}, {"resp/native", true}, {"resp/chat", false}, {"resp/chat", true},
	} {
		t.Run(fmt.Sprintf("%s midway=%v", tt.model, tt.midway), func(t *testing.T) {
			t.Parallel()
			native, chatOnly := fakes.NewOpenAI(t, "sk-resp"), fakes.NewOpenAI(t, "sk-chat")
			g := harness.Start(t, harness.WithConfig(fmt.Sprintf(`providers:
  - {slug: oairesp, kind: openai, base_url: %s, api_key: sk-resp, responses_api: true, timeout: 60s, idle_timeout: 60s}
  - {slug: chatonly, kind: openai, base_url: %s, api_key: sk-chat, timeout: 60s, idle_timeout: 60s}
models:
  - {id: resp/native, modality: chat, endpoints: [{provider: oairesp, upstream_model: gpt-fake, pricing: {per_million_prompt_tokens: 1, per_million_completion_tokens: 2}}]}
  - {id: resp/chat, modality: chat, endpoints: [{provider: chatonly, upstream_model: fake-1, pricing: {per_million_prompt_tokens: 1, per_million_completion_tokens: 2}}]}
`, native.BaseURL(), chatOnly.BaseURL())))
			key, _ := g.Key(t, nil)
			up := native
			if tt.model == "resp/chat" {
				up = chatOnly
			}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			hold := make(chan struct{})
			defer close(hold)
			if tt.midway { // its first token, then a stall
				first := `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"fake-1","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}` + "\n\n"
				if tt.model == "resp/native" {
					first = "event: response.created\ndata: " + `{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","model":"gpt-fake","output":[]}}` + "\n\n" +
						"event: response.output_text.delta\ndata: " + `{"type":"response.output_text.delta","sequence_number":1,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hel"}` + "\n\n"
				}
				up.Script(fakes.Step{Events: []string{first, "data: [DONE]\n\n"}, HoldAfter: len(first) + 1})
			} else {
				up.Script(fakes.Step{Hold: hold})
			}
			conn, _, err := websocket.Dial(ctx, strings.Replace(g.URL, "http://", "ws://", 1)+"/responses",
				&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + key}}})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.CloseNow()
			if err := conn.Write(ctx, websocket.MessageText, []byte(`{"type":"response.create","model":"`+tt.model+`","input":"hello there"}`)); err != nil {
				t.Fatal(err)
			}
			harness.Eventually(t, 5*time.Second, func() bool { return up.Calls() == 1 })
			if tt.midway {
				if _, _, err := conn.Read(ctx); err != nil {
					t.Fatal(err)
				}
			}
			closed := make(chan error, 1)
			go func() { closed <- conn.Close(websocket.StatusNormalClosure, "bye") }()
			select {
			case <-up.Gone:
			case <-ctx.Done():
				t.Fatal("the upstream call went on after the client closed")
			}
			if err := <-closed; err != nil {
				t.Fatalf("the close was not answered: %v", err)
			}
			var rec map[string]any
			harness.Eventually(t, 5*time.Second, func() bool {
				list := g.Do(t, "GET", "/generations?limit=1", g.Admin, nil)
				data, _ := list.JSON(t)["data"].([]any)
				if len(data) == 0 {
					return false
				}
				rec = data[0].(map[string]any)
				return true
			})
			if rec["cancelled"] != true {
				t.Fatalf("record: cancelled %v, finish_reason %v", rec["cancelled"], rec["finish_reason"])
			}
		})
	}
}

// TestResponsesWebSocketQueue: messages a client sends while a call of its connection runs wait their turn and are
// answered in order; when the client closes (or sends more ahead than the connection holds: a policy-violation
// close), the running call ends and the messages that waited are not answered: one call, one record.
func TestResponsesWebSocketQueue(t *testing.T) {
	t.Parallel()
	create := []byte(`{"type":"response.create","model":"resp/chat","input":"hello there"}`)
	for _, tt := range []struct {
		name  string
		ahead int // messages sent while the first call is held
		end   string
	}{
		{"answered in order", 1, "release"},
		{"the client closes", 2, "close"},
		{"more than the connection holds", 6, "overflow"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			up := fakes.NewOpenAI(t, "sk-chat")
			g := harness.Start(t, harness.WithConfig(fmt.Sprintf(`providers:
  - {slug: chatonly, kind: openai, base_url: %s, api_key: sk-chat, timeout: 60s, idle_timeout: 60s}
models:
  - {id: resp/chat, modality: chat, endpoints: [{provider: chatonly, upstream_model: fake-1, pricing: {per_million_prompt_tokens: 1, per_million_completion_tokens: 2}}]}
`, up.BaseURL())))
			key, _ := g.Key(t, nil)
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			hold := make(chan struct{})
			up.Script(fakes.Step{Hold: hold})
			conn, _, err := websocket.Dial(ctx, strings.Replace(g.URL, "http://", "ws://", 1)+"/responses",
				&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + key}}})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.CloseNow()
			if err := conn.Write(ctx, websocket.MessageText, create); err != nil {
				t.Fatal(err)
			}
			harness.Eventually(t, 5*time.Second, func() bool { return up.Calls() == 1 })
			for range tt.ahead {
				if err := conn.Write(ctx, websocket.MessageText, create); err != nil {
					t.Fatal(err)
				}
			}
			switch tt.end {
			case "release":
				close(hold)
				completed := 0
				for completed < 2 {
					_, b, err := conn.Read(ctx)
					if err != nil {
						t.Fatal(err)
					}
					if strings.Contains(string(b), `"type":"response.completed"`) {
						completed++
					}
				}
				if up.Calls() != 2 {
					t.Fatalf("%d upstream calls, want 2", up.Calls())
				}
				return
			case "close":
				if err := conn.Close(websocket.StatusNormalClosure, "bye"); err != nil {
					t.Fatal(err)
				}
			case "overflow":
				if _, _, err := conn.Read(ctx); websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
					t.Fatalf("read: %v, want a policy-violation close", err)
				}
			}
			defer close(hold)
			select {
			case <-up.Gone:
			case <-ctx.Done():
				t.Fatal("the running call went on")
			}
			g.Stop() // the connection's handler has returned, and the records are written
			db, err := sql.Open("pgx", g.DatabaseURL)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var n int
			if err := db.QueryRowContext(ctx, "SELECT count(*) FROM generations").Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 1 || up.Calls() != 1 {
				t.Fatalf("%d records and %d upstream calls, want 1 and 1", n, up.Calls())
			}
		})
	}
}

// TestResponsesMalformedNative: an answer not streamed from an upstream that speaks the Responses API is its
// completion's response object; a completion without one is the upstream's fault: a 502 in the envelope, recorded
// as an error and not billed.
func TestResponsesMalformedNative(t *testing.T) {
	t.Parallel()
	native := fakes.NewOpenAI(t, "sk-resp")
	g := harness.Start(t, harness.WithConfig(fmt.Sprintf(`providers:
  - {slug: oairesp, kind: openai, base_url: %s, api_key: sk-resp, responses_api: true}
models:
  - {id: resp/native, modality: chat, endpoints: [{provider: oairesp, upstream_model: gpt-fake, pricing: {per_million_prompt_tokens: 1, per_million_completion_tokens: 2}}]}
`, native.BaseURL())))
	key, _ := g.Key(t, nil)
	ev := func(typ, data string) string { return "event: " + typ + "\ndata: " + data + "\n\n" }
	for _, response := range []string{"null", `"x"`} {
		native.Script(fakes.Step{Events: []string{
			ev("response.created", `{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[]}}`),
			ev("response.completed", `{"type":"response.completed","sequence_number":1,"response":`+response+`}`),
		}})
		r := g.Do(t, "POST", "/responses", key, `{"model":"resp/native","input":"hi"}`)
		harness.AssertError(t, r, 502)
		if rec := generationOf(t, g, r); rec["finish_reason"] != "error" || fmt.Sprint(rec["total_cost"]) != "0" {
			t.Fatalf("response %s: record finish_reason %v, total_cost %v", response, rec["finish_reason"], rec["total_cost"])
		}
	}
}

// TestResponsesWebSocketContinuesStored: a turn that continues the connection's last response, when that response
// itself continued one the upstream stored, names the stored one: a Responses upstream gets it with the turns laid
// before the input, and a chat-only model is refused with a 400 naming previous_response_id, as over HTTP, rather
// than answering without the stored part of the conversation.
func TestResponsesWebSocketContinuesStored(t *testing.T) {
	t.Parallel()
	native, chatOnly := fakes.NewOpenAI(t, "sk-resp"), fakes.NewOpenAI(t, "sk-chat")
	g := harness.Start(t, harness.WithConfig(fmt.Sprintf(`providers:
  - {slug: oairesp, kind: openai, base_url: %s, api_key: sk-resp, responses_api: true}
  - {slug: chatonly, kind: openai, base_url: %s, api_key: sk-chat}
models:
  - {id: resp/native, modality: chat, endpoints: [{provider: oairesp, upstream_model: gpt-fake, pricing: {per_million_prompt_tokens: 1, per_million_completion_tokens: 2}}]}
  - {id: resp/chat, modality: chat, endpoints: [{provider: chatonly, upstream_model: fake-1, pricing: {per_million_prompt_tokens: 1, per_million_completion_tokens: 2}}]}
`, native.BaseURL(), chatOnly.BaseURL())))
	key, _ := g.Key(t, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, strings.Replace(g.URL, "http://", "ws://", 1)+"/responses",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + key}}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	// turn sends a response.create and reads its events up to the last: response.completed or an error.
	turn := func(model, input, previous string) map[string]any {
		t.Helper()
		msg := fmt.Sprintf(`{"type":"response.create","model":%q,"input":%q,"previous_response_id":%q}`, model, input, previous)
		if err := conn.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		for {
			_, b, err := conn.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var ev map[string]any
			if err := json.Unmarshal(b, &ev); err != nil {
				t.Fatal(err)
			}
			if ev["type"] == "response.completed" || ev["type"] == "error" || ev["type"] == "response.failed" {
				return ev
			}
		}
	}
	// A response the upstream stores, made over HTTP: the connection has not seen it.
	stored := g.Do(t, "POST", "/responses", key, `{"model":"resp/native","input":"Remember 42."}`)
	storedID, _ := stored.JSON(t)["id"].(string)
	if stored.Status != 200 || storedID == "" {
		t.Fatalf("the stored response: %d %s", stored.Status, stored.Body)
	}
	first := turn("resp/native", "Hi", storedID)
	response, _ := first["response"].(map[string]any)
	if id, _ := response["id"].(string); first["type"] != "response.completed" || id == "" {
		t.Fatalf("first turn ended with %v", first)
	}
	id := response["id"].(string)
	if ev := turn("resp/chat", "And?", id); ev["type"] != "error" || !strings.Contains(fmt.Sprint(ev["error"]), "previous_response_id") {
		t.Fatalf("a chat-only model continuing a stored conversation: %v, want a 400 naming previous_response_id", ev)
	}
	if n := chatOnly.Calls(); n != 0 {
		t.Fatalf("the chat-only upstream was called %d times", n)
	}
	if ev := turn("resp/native", "And?", id); ev["type"] != "response.completed" {
		t.Fatalf("third turn ended with %v", ev)
	}
	reqs := native.Requests()
	var body struct {
		Previous string            `json:"previous_response_id"`
		Input    []json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(reqs[len(reqs)-1].Body, &body); err != nil || body.Previous != storedID || len(body.Input) < 3 ||
		!strings.Contains(string(body.Input[0]), "Hi") || !strings.Contains(string(body.Input[len(body.Input)-1]), "And?") {
		t.Fatalf("the Responses upstream got %s", reqs[len(reqs)-1].Body)
	}
}
