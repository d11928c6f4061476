package gemini

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/adapters/internal/jsonenc/jsonenctest"
	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/test/fakes"
)

// wire is an event as encoding/json decodes it: the shape goccy/go-json decoded the events into before.
type wire struct {
	Candidates []struct {
		Content struct {
			Parts []struct {
				Text         string `json:"text"`
				Thought      bool   `json:"thought"`
				FunctionCall *struct {
					Name string          `json:"name"`
					Args json.RawMessage `json:"args"`
				} `json:"functionCall"`
			} `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	UsageMetadata *struct {
		PromptTokenCount        int64 `json:"promptTokenCount"`
		CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
		ThoughtsTokenCount      int64 `json:"thoughtsTokenCount"`
		CachedContentTokenCount int64 `json:"cachedContentTokenCount"`
	} `json:"usageMetadata"`
	Error *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// reference decodes an event with encoding/json, and returns what decodeResponse would of it: the first candidate
// and its parts, not what the lists hold past their length.
func reference(data []byte) (response, error) {
	var w wire
	if err := json.Unmarshal(data, &w); err != nil {
		return response{}, err
	}
	ev := response{candidates: len(w.Candidates)}
	if len(w.Candidates) > 0 {
		c := w.Candidates[0]
		ev.candidate.finishReason = c.FinishReason
		for _, p := range c.Content.Parts {
			q := part{text: p.Text, thought: p.Thought}
			if f := p.FunctionCall; f != nil {
				q.hasCall, q.call = true, functionCall{name: f.Name, args: f.Args}
			}
			ev.candidate.parts = append(ev.candidate.parts, q)
		}
	}
	if f := w.PromptFeedback; f != nil {
		ev.hasFeedback, ev.blockReason = true, f.BlockReason
	}
	if u := w.UsageMetadata; u != nil {
		ev.hasUsage, ev.usage = true, usageMetadata{u.PromptTokenCount, u.CandidatesTokenCount, u.ThoughtsTokenCount, u.CachedContentTokenCount}
	}
	if e := w.Error; e != nil {
		ev.hasErr, ev.err = true, responseError{code: e.Code, message: e.Message}
	}
	return ev, nil
}

// observed is what the gateway reads of an event: the first candidate only when there is one, its parts up to
// their length (a list's capacity may hold more).
func observed(ev response) response {
	if ev.candidates == 0 {
		ev.candidate = candidate{}
	}
	var parts []part
	for _, p := range ev.candidate.parts {
		parts = append(parts, p)
	}
	ev.candidate.parts = parts
	return ev
}

// responseSeeds are Gemini's events as it sends them, and the edges of encoding/json's decoding: case, nulls, keys
// given twice (a list's items read into what the first left), values of the wrong type, escapes, what is not JSON.
var responseSeeds = []string{
	`{"candidates":[{"content":{"parts":[{"text":"Hello"}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":5,"totalTokenCount":5},"modelVersion":"gemini-2.5-flash"}`,
	`{"candidates":[{"content":{"parts":[{"text":"think","thought":true}],"role":"model"}}]}`,
	`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}}],"role":"model"},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":7,"thoughtsTokenCount":2,"cachedContentTokenCount":1}}`,
	`{"candidates":[{"content":{"parts":[{"text":" world"}],"role":"model"},"finishReason":"MAX_TOKENS"}]}`,
	`{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":5}}`,
	`{"error":{"code":429,"message":"Resource exhausted","status":"RESOURCE_EXHAUSTED"}}`,
	`null`, `{}`, `[]`, `5`, ` {"candidates" : [ ] } `, `{"candidates":null}`, `{"candidates":[null]}`, `{"candidates":[{},{"x":1}]}`,
	`{"candidates":[{},{"finishReason":5}]}`, `{"candidates":{}}`, `{"CANDIDATES":[{"Content":{"PARTS":[{"TEXT":"a"}]},"FINISHREASON":"STOP"}]}`,
	`{"candidates":[{"content":{"parts":[{"text":"a"},{"text":"b"}]}}],"candidates":[{"content":{"parts":[{"thought":true}]}}]}`,
	`{"candidates":[{"content":{"parts":[{"text":"a"},{"text":"b"}]}}],"candidates":[],"candidates":[{"finishReason":"STOP"}]}`,
	`{"candidates":[{"content":{"parts":[{"text":"a"}]}}],"candidates":null,"candidates":[{}]}`,
	`{"candidates":[{"content":{"parts":[{"text":"a"},{"text":"b"},{"text":"c"}],"parts":[{"text":"d"}],"parts":[{},{},{},{}]}}]}`,
	`{"candidates":[{"content":{"parts":[{"text":"a"}],"parts":null,"parts":[{}]}}]}`,
	`{"candidates":[{"content":{"parts":[null,{"text":null,"thought":null}]}}]}`, `{"candidates":[{"content":null}]}`,
	`{"candidates":[{"content":{"parts":[{"thought":"yes"}]}}]}`, `{"candidates":[{"content":{"parts":[{"thought":1}]}}]}`,
	`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":null}}]}}]}`,
	`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f"}}]}}]}`,
	`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{"a":[1,2.5e3,"x\u00e9"]}}},{"functionCall":null}]}}]}`,
	`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":1},"functionCall":{"args":" \"s\" "}}]}}]}`,
	`{"candidates":[{"content":{"parts":[{"functionCall":{"args":{}},"functionCall":null,"functionCall":{"name":"g"}}]}}]}`,
	`{"candidates":[{"content":{"parts":[{"functionCall":5}]}}]}`, `{"candidates":[{"content":{"parts":{}}}]}`,
	`{"promptFeedback":null}`, `{"promptFeedback":{"blockReason":"SAFETY"},"promptFeedback":{}}`, `{"promptFeedback":{"blockReason":"a"},"promptFeedback":null}`,
	`{"usageMetadata":{"promptTokenCount":1.5}}`, `{"usageMetadata":{"promptTokenCount":"1"}}`, `{"usageMetadata":{"promptTokenCount":1},"usageMetadata":null}`,
	`{"usageMetadata":{"promptTokenCount":1},"usageMetadata":{"candidatesTokenCount":2,"promptTokenCount":null}}`,
	`{"error":{"code":500.5}}`, `{"error":{"code":-1,"message":"m"},"error":null}`, `{"error":{}}`, `{"error":{"message":5}}`,
	`{"candidates":[]} x`, `{"candidates":[`, `{"a":"\x"}`, `{"a":"a` + "\n" + `"}`, `{"a":01}`, `{"a":tru}`, `nul`,
	`{"candidates":[{"content":{"parts":[{"text":"\ud83d\ude00\ud800"}]}}]}`, "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"\xff\"}]}}]}",
	`{"ſinishReason":1,"candidateſ":[]}`,
}

// FuzzDecodeResponse holds decodeResponse to encoding/json: the same event from what it accepts, an error for
// what it refuses. Its seeds run in every go test.
func FuzzDecodeResponse(f *testing.F) {
	jsonenctest.Seeds(f, responseSeeds, func(t *testing.T, data []byte) {
		got, err := decodeResponse(data)
		want, werr := reference(data)
		jsonenctest.Same(t, fmt.Sprintf("%q", data), observed(got), err, observed(want), werr)
	})
}

// TestChatStreamUsageBounds: Gemini's completion is its candidates' count plus its thoughts', and a usage with a
// count out of bounds is not taken (chat.MaxTokenCount): the call is then priced as one whose upstream sent no
// usage. A negative count that cancels a positive one must not make a plausible completion of counts that are not.
func TestChatStreamUsageBounds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		usage string
		want  *chat.Usage
	}{
		{"counts", `{"promptTokenCount":9,"candidatesTokenCount":5,"thoughtsTokenCount":7,"cachedContentTokenCount":2}`,
			&chat.Usage{PromptTokens: 9, CompletionTokens: 12, ReasoningTokens: 7, CachedTokens: 2}},
		{"a negative count cancelled", `{"promptTokenCount":9,"candidatesTokenCount":-1000,"thoughtsTokenCount":1000}`, nil},
		{"a sum that wraps around", `{"promptTokenCount":9,"candidatesTokenCount":9223372036854775807,"thoughtsTokenCount":9223372036854775807}`, nil},
		{"a completion past the bound", `{"promptTokenCount":9,"candidatesTokenCount":5000000,"thoughtsTokenCount":5000001}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Hello"}]}}]}` + "\r\n\r\n" +
				`data: {"candidates":[{"content":{"role":"model","parts":[{"text":"!"}]},"finishReason":"STOP"}],"usageMetadata":` + tc.usage + "}\r\n\r\n"
			res, err := fakes.Gather(newChatStream(strings.NewReader(body), 200))
			if err != nil {
				t.Fatal(err)
			}
			if res.Content.String() != "Hello!" || fmt.Sprint(res.Usage) != fmt.Sprint(tc.want) {
				t.Fatalf("content %q usage %+v, want %+v", res.Content.String(), res.Usage, tc.want)
			}
		})
	}
}
