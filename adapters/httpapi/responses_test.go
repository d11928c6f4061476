package httpapi

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/ports"
)

// eventsOut keeps the events a sink sends.
type eventsOut struct{ events []string }

func (o *eventsOut) Flush() error         { return nil }
func (o *eventsOut) begin(ports.ChatHead) {}
func (o *eventsOut) native([]byte) error  { return nil }
func (o *eventsOut) whole([]byte) error   { return nil }
func (o *eventsOut) event(_ string, data []byte) error {
	o.events = append(o.events, string(data))
	return nil
}

// TestResponsesTranslatedEvents holds the events written from chat chunks to the Responses API's: their types in
// order, numbered from 0, each with the members OpenAI's stream has (as the openai client reads them).
func TestResponsesTranslatedEvents(t *testing.T) {
	out := &eventsOut{}
	s := &responsesSink{out: out}
	s.Start(ports.ChatHead{GenerationID: "gen-1", Model: "m", Provider: "p", Created: 7, Stream: true})
	for _, c := range []chat.Chunk{
		{Reasoning: "think"},
		{Content: "Hel"}, {Content: `lo "x"`},
		{ToolCalls: []chat.ToolCallDelta{{Index: 0, ID: "call_1", Name: "f", Arguments: `{"a":`}}},
		{ToolCalls: []chat.ToolCallDelta{{Index: 0, Arguments: `1}`}}},
	} {
		if err := s.Chunk(c); err != nil {
			t.Fatal(err)
		}
	}
	r := &chat.Result{FinishReason: "tool_calls", Usage: &chat.Usage{PromptTokens: 3, CompletionTokens: 4}}
	if err := s.Finish(r, 25); err != nil {
		t.Fatal(err)
	}
	want := []struct{ typ, members string }{
		{"response.created", `"response":{"id":"gen-1","object":"response","created_at":7,"status":"in_progress"`},
		{"response.in_progress", `"response":{"id":"gen-1"`},
		{"response.output_item.added", `"output_index":0,"item":{"type":"reasoning","id":"rs_gen-1_0","status":"in_progress","summary":[]}`},
		{"response.reasoning_summary_part.added", `"item_id":"rs_gen-1_0","output_index":0,"summary_index":0,"part":{"type":"summary_text","text":""}`},
		{"response.reasoning_summary_text.delta", `"item_id":"rs_gen-1_0","output_index":0,"summary_index":0,"delta":"think"`},
		{"response.reasoning_summary_text.done", `"item_id":"rs_gen-1_0","output_index":0,"summary_index":0,"text":"think"`},
		{"response.reasoning_summary_part.done", `"part":{"type":"summary_text","text":"think"}`},
		{"response.output_item.done", `"output_index":0,"item":{"type":"reasoning","id":"rs_gen-1_0","status":"completed","summary":[{"type":"summary_text","text":"think"}]}`},
		{"response.output_item.added", `"output_index":1,"item":{"type":"message","id":"msg_gen-1_1","status":"in_progress","role":"assistant","content":[]}`},
		{"response.content_part.added", `"item_id":"msg_gen-1_1","output_index":1,"content_index":0,"part":{"type":"output_text","text":"","annotations":[],"logprobs":[]}`},
		{"response.output_text.delta", `"item_id":"msg_gen-1_1","output_index":1,"content_index":0,"logprobs":[],"delta":"Hel"`},
		{"response.output_text.delta", `"delta":"lo \"x\""`},
		{"response.output_text.done", `"item_id":"msg_gen-1_1","output_index":1,"content_index":0,"text":"Hello \"x\"","logprobs":[]`},
		{"response.content_part.done", `"part":{"type":"output_text","text":"Hello \"x\"","annotations":[],"logprobs":[]}`},
		{"response.output_item.done", `"content":[{"type":"output_text","text":"Hello \"x\"","annotations":[],"logprobs":[]}]`},
		{"response.output_item.added", `"output_index":2,"item":{"type":"function_call","id":"fc_gen-1_2","status":"in_progress","call_id":"call_1","name":"f","arguments":""}`},
		{"response.function_call_arguments.delta", `"item_id":"fc_gen-1_2","output_index":2,"delta":"{\"a\":"`},
		{"response.function_call_arguments.delta", `"delta":"1}"`},
		{"response.function_call_arguments.done", `"item_id":"fc_gen-1_2","output_index":2,"name":"f","arguments":"{\"a\":1}"`},
		{"response.output_item.done", `"status":"completed","call_id":"call_1","name":"f","arguments":"{\"a\":1}"`},
		{"response.completed", `"status":"completed"`},
	}
	if len(out.events) != len(want) {
		t.Fatalf("%d events, want %d:\n%s", len(out.events), len(want), out.events)
	}
	for i, w := range want {
		ev := out.events[i]
		var head struct {
			Type string `json:"type"`
			Seq  *int   `json:"sequence_number"`
		}
		if err := json.Unmarshal([]byte(ev), &head); err != nil {
			t.Fatalf("event %d is not JSON: %v\n%s", i, err, ev)
		}
		if head.Type != w.typ || head.Seq == nil || *head.Seq != i {
			t.Errorf("event %d: type %q, sequence_number %v; want %q, %d", i, head.Type, head.Seq, w.typ, i)
		}
		if !strings.Contains(ev, w.members) {
			t.Errorf("event %d (%s) lacks %s:\n%s", i, w.typ, w.members, ev)
		}
	}
	if last := out.events[len(out.events)-1]; !strings.Contains(last, `"input_tokens":3`) || !strings.Contains(last, `"cost":0.000025`) {
		t.Errorf("response.completed without the usage and its cost: %s", last)
	}
}

// TestResponsesToolCalls: a translated stream's tool calls are the items a whole answer holds, however the upstream
// sends their deltas: interleaved (each item's done event has its whole arguments, and no delta follows it), with
// text between their pieces, or with the id and name repeated on every delta. The first call's arguments stream
// as they come; the calls after it, and text after a call began, come whole after it.
func TestResponsesToolCalls(t *testing.T) {
	delta := func(i int, id, name, args string) chat.Chunk {
		return chat.Chunk{ToolCalls: []chat.ToolCallDelta{{Index: i, ID: id, Name: name, Arguments: args}}}
	}
	for _, tt := range []struct {
		name   string
		chunks []chat.Chunk
		want   []string // each call's done event: call id, name, arguments
	}{
		{"interleaved", []chat.Chunk{delta(0, "c1", "f", `{"a":`), delta(1, "c2", "g", "{}"), delta(0, "", "", "1}")},
			[]string{`c1 f {"a":1}`, `c2 g {}`}},
		{"text between the pieces", []chat.Chunk{delta(0, "c1", "f", `{"a":`), {Content: "hm"}, delta(0, "", "", "1}")},
			[]string{`c1 f {"a":1}`}},
		{"id and name on every delta", []chat.Chunk{delta(0, "c1", "f", `{"a":`), delta(0, "c1", "f", "1}")},
			[]string{`c1 f {"a":1}`}},
		{"a name in pieces", []chat.Chunk{delta(0, "c1", "get_", ""), delta(0, "", "weather", ""), delta(0, "", "", `{"a":1}`)},
			[]string{`c1 get_weather {"a":1}`}},
		{"the id after the name", []chat.Chunk{delta(0, "", "f", ""), delta(0, "c1", "", ""), delta(0, "", "", `{"a":1}`)},
			[]string{`c1 f {"a":1}`}},
		{"arguments after the finish", []chat.Chunk{delta(0, "c1", "f", `{"a":`), {FinishReason: "tool_calls"}, delta(0, "", "", "1}"), delta(1, "c2", "g", "{}")},
			[]string{`c1 f {"a":1}`, `c2 g {}`}},
		{"every call at index 0", []chat.Chunk{delta(0, "c1", "f", "{}"), delta(0, "c2", "g", `{"b":2}`)},
			[]string{`c1 f {}`, `c2 g {"b":2}`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := &eventsOut{}
			s := &responsesSink{out: out}
			s.Start(ports.ChatHead{GenerationID: "gen-1", Model: "m", Stream: true})
			for _, c := range tt.chunks {
				if err := s.Chunk(c); err != nil {
					t.Fatal(err)
				}
			}
			if !strings.Contains(strings.Join(out.events, "\n"), `"type":"response.function_call_arguments.delta"`) {
				t.Fatalf("the first call's arguments did not stream: %q", out.events)
			}
			if err := s.Finish(&chat.Result{FinishReason: "tool_calls"}, 0); err != nil {
				t.Fatal(err)
			}
			var got []string
			done := map[string]bool{}
			for _, ev := range out.events {
				var e struct {
					Type   string `json:"type"`
					ItemID string `json:"item_id"`
					Item   struct {
						Type, ID, Name, Arguments string
						CallID                    string `json:"call_id"`
					} `json:"item"`
				}
				if err := json.Unmarshal([]byte(ev), &e); err != nil {
					t.Fatal(err)
				}
				if e.Type == "response.function_call_arguments.delta" && done[e.ItemID] {
					t.Fatalf("a delta after its item was done: %s", ev)
				}
				if e.Type == "response.output_item.done" && e.Item.Type == "function_call" {
					done[e.Item.ID] = true
					got = append(got, e.Item.CallID+" "+e.Item.Name+" "+e.Item.Arguments)
				}
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Fatalf("calls %q, want %q", got, tt.want)
			}
		})
	}
}

// TestResponsesNative: an upstream's own Responses events go on as they came; a stream it breaks ends with
// response.failed numbered after its last event and naming its response's id, and an answer not streamed whose
// completion holds no response object is the upstream's fault, not a 200.
func TestResponsesNative(t *testing.T) {
	created := "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_x\",\"status\":\"in_progress\"}}\n\n"
	delta := "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\": 1,\"delta\":\"\\\"sequence_number\\\":9\"}\n\n"
	out := &eventsOut{}
	s := &responsesSink{out: out}
	s.Start(ports.ChatHead{GenerationID: "gen-1", Model: "m", Stream: true})
	for _, ev := range []string{created, delta} {
		if err := s.Chunk(chat.Chunk{Native: domain.Opaque(ev)}); err != nil {
			t.Fatal(err)
		}
	}
	s.Fail(domain.E(domain.KindUpstream, "upstream_stream_broke", "the provider's answer broke off"))
	if len(out.events) != 1 || !strings.HasPrefix(out.events[0], `{"type":"response.failed","sequence_number":2,"response":{"id":"resp_x",`) {
		t.Fatalf("events %q", out.events)
	}

	for _, completed := range []string{`null`, `"x"`} {
		s = &responsesSink{out: &eventsOut{}}
		s.Start(ports.ChatHead{GenerationID: "gen-1", Model: "m"})
		ev := "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":1,\"response\":" + completed + "}\n\n"
		if err := s.Chunk(chat.Chunk{Native: domain.Opaque(created + ev)}); err != nil {
			t.Fatal(err)
		}
		var ue *ports.UpstreamError
		if err := s.Finish(&chat.Result{}, 0); !errors.As(err, &ue) {
			t.Fatalf("a completion with the response %s: %v, want the upstream's fault", completed, err)
		}
	}
}
