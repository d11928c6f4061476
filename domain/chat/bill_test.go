package chat_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/domain/chat"
)

// TestBill: a usage is taken when plausible for what was sent and delivered, and otherwise the call is billed at
// the estimate, never past its reservation. "Hi there" is 12 prompt tokens at its worst (4 a message and a token a
// byte) and 6 at four bytes a token; max_tokens 10; prices 2 and 8 micro-dollars a token: a reservation of
// 2×12 + 8×10 = 104.
func TestBill(t *testing.T) {
	t.Parallel()
	ten := int64(10)
	r := chat.Request{MaxTokens: &ten, Messages: []chat.Message{{Role: "user", Text: true,
		Content: []chat.Part{{Type: "text", Text: "Hi there"}}}}}
	two, eight := domain.Micros(2_000_000), domain.Micros(8_000_000) // $2 and $8 a million tokens
	p := catalog.Pricing{PerMillionPromptTokens: &two, PerMillionCompletionTokens: &eight}
	if got := r.Estimate(p, nil); got != 104 {
		t.Fatalf("reservation %d, want 104", got)
	}
	maxPrompt := int64(2*12 + chat.PromptSlack)
	for _, tt := range []struct {
		name       string
		usage      *chat.Usage
		delivered  int64
		cost       domain.Micros
		estimated  bool
		implausibe bool
	}{
		{"as counted", &chat.Usage{PromptTokens: 9, CompletionTokens: 3}, 10, 2*9 + 8*3, false, false},
		{"plausible past the reservation", &chat.Usage{PromptTokens: maxPrompt, CompletionTokens: 10}, 10, domain.Micros(2*maxPrompt + 80), false, false},
		{"a prompt past twice the worst case and the slack", &chat.Usage{PromptTokens: maxPrompt + 1, CompletionTokens: 3}, 10, 2*6 + 8*3, true, true},
		{"9,999,999 prompt tokens", &chat.Usage{PromptTokens: 9_999_999, CompletionTokens: 1}, 2, 2*6 + 8*1, true, true},
		{"a completion at its limit and the slack", &chat.Usage{PromptTokens: 6, CompletionTokens: 10 + chat.CompletionSlack}, 2, 2*6 + 8*26, false, false},
		{"a completion past its limit and what was delivered", &chat.Usage{PromptTokens: 6, CompletionTokens: 10 + chat.CompletionSlack + 1}, 2, 2*6 + 8*1, true, true},
		{"a limit ignored: as many tokens as bytes delivered", &chat.Usage{PromptTokens: 6, CompletionTokens: 400}, 400, 2*6 + 8*400, false, false},
		{"a negative count", &chat.Usage{PromptTokens: 6, CompletionTokens: -1}, 2, 2*6 + 8*1, true, true},
		{"no usage", nil, 8, 2*6 + 8*2, true, false},
		{"no usage, past the reservation: the reservation", nil, 4000, 104, true, false},
	} {
		b := r.Bill(p, nil, tt.usage, tt.delivered)
		if b.Cost != tt.cost || b.Estimated != tt.estimated || b.Implausible != tt.implausibe {
			t.Errorf("%s: %+v, want cost %d, estimated %v, implausible %v", tt.name, b, tt.cost, tt.estimated, tt.implausibe)
		}
	}
}

// TestResultKeep: a result keeps at most Keep bytes of text, cut at a character, and counts all it was given; a
// tool call's arguments gather a delta at a time.
func TestResultKeep(t *testing.T) {
	t.Parallel()
	r := chat.Result{Keep: 10}
	r.Add(chat.Chunk{Content: "héllo"})                                                        // 6 bytes
	r.Add(chat.Chunk{Reasoning: "ééé"})                                                        // 6 bytes: 4 fit, 2 characters
	r.Add(chat.Chunk{ToolCalls: []chat.ToolCallDelta{{Index: 0, Name: "f", Arguments: "{}"}}}) // nothing fits
	if r.Content.String() != "héllo" || r.Reasoning.String() != "éé" || r.ToolCalls[0].Arguments != "" ||
		r.Bytes() != 15 || r.ContentBytes != 6 || r.ReasoningBytes != 6 || r.ToolBytes != 3 {
		t.Fatalf("kept %q %q %+v, counted %d (%d, %d, %d)", r.Content.String(), r.Reasoning.String(), r.ToolCalls, r.Bytes(),
			r.ContentBytes, r.ReasoningBytes, r.ToolBytes)
	}
	var all chat.Result
	for range 1000 {
		all.Add(chat.Chunk{ToolCalls: []chat.ToolCallDelta{{Index: 3, Arguments: "ab"}}})
	}
	if got := all.ToolCalls[0].Arguments; got != strings.Repeat("ab", 1000) || !utf8.ValidString(got) {
		t.Fatalf("arguments %d bytes", len(got))
	}
	// Past MaxToolCalls distinct indexes, the rest share the last number: the result holds no more calls.
	for i := range chat.MaxToolCalls + 10 {
		all.Add(chat.Chunk{ToolCalls: []chat.ToolCallDelta{{Index: 100 + i, Name: "g"}}})
	}
	if len(all.ToolCalls) != chat.MaxToolCalls {
		t.Fatalf("%d tool calls, want %d", len(all.ToolCalls), chat.MaxToolCalls)
	}
}

// TestUsageCost: the prompt's cached tokens are priced apart — reads, 5-minute and 1-hour writes — each at its
// price or, unset, at the one it falls back to; the sum is rounded once. Prices in micro-dollars a million tokens.
func TestUsageCost(t *testing.T) {
	t.Parallel()
	m := func(v domain.Micros) *domain.Micros { return &v }
	full := catalog.Pricing{PerMillionPromptTokens: m(3_000_000), PerMillionCompletionTokens: m(15_000_000),
		PerMillionCacheReadTokens: m(300_000), PerMillionCacheWriteTokens: m(3_750_000), PerMillionCacheWrite1hTokens: m(6_000_000)}
	only5m := catalog.Pricing{PerMillionPromptTokens: m(3_000_000), PerMillionCacheWriteTokens: m(3_750_000)}
	none := catalog.Pricing{PerMillionPromptTokens: m(3_000_000)}
	u := chat.Usage{PromptTokens: 211_002, CachedTokens: 200_001, CacheWrite1hTokens: 10_000, CompletionTokens: 501}
	for _, tt := range []struct {
		name     string
		p        catalog.Pricing
		u        chat.Usage
		cost     domain.Micros
		discount *domain.Micros
	}{
		// 1,001×3 + 200,001×0.3 + 10,000×6 + 501×15 = 130,518.3; without caching 211,002×3 + 501×15 = 640,521
		{"reads and 1-hour writes", full, u, 130_518, m(510_003)},
		{"5-minute writes", full, chat.Usage{PromptTokens: 1000, CacheWriteTokens: 1000}, 3_750, m(-750)},
		{"a 1-hour write at the 5-minute price", only5m, chat.Usage{PromptTokens: 1000, CacheWrite1hTokens: 1000}, 3_750, m(-750)},
		{"no cache prices: the prompt's", none, u, 633_006, m(0)},
		{"nothing cached", full, chat.Usage{PromptTokens: 10, CompletionTokens: 1}, 45, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := chat.Request{}.Bill(tt.p, nil, &tt.u, 0)
			got := chat.UsageCost(tt.p, tt.u)
			if got != tt.cost || b.Cost != tt.cost && !b.Estimated {
				t.Fatalf("cost %d (billed %d), want %d", got, b.Cost, tt.cost)
			}
			if fmt.Sprint(deref(b.CacheDiscount)) != fmt.Sprint(deref(tt.discount)) && !b.Estimated {
				t.Fatalf("cache discount %v, want %v", deref(b.CacheDiscount), deref(tt.discount))
			}
		})
	}
	// A reservation prices every prompt token at the dearest of the prompt's prices: here a 1-hour write.
	r := chat.Request{Messages: []chat.Message{{Role: "user", Text: true, Content: []chat.Part{{Type: "text", Text: "Hi there"}}}}}
	if got, want := r.Estimate(full, nil), chat.Cost(catalog.Pricing{PerMillionPromptTokens: m(6_000_000),
		PerMillionCompletionTokens: m(15_000_000)}, 12, chat.DefaultMaxTokens); got != want {
		t.Fatalf("reservation %d, want %d", got, want)
	}
}

func deref(d *domain.Micros) any {
	if d == nil {
		return nil
	}
	return *d
}

// TestResultToolCalls: tool-call deltas gather by their index, in the order the indexes first came: the name in
// its pieces, once (some upstreams repeat the whole name with every delta), the arguments in the order they came,
// also when the deltas of two calls interleave; a delta with another id than its index's call begins a new call.
func TestResultToolCalls(t *testing.T) {
	for _, tt := range []struct {
		name   string
		deltas [][]chat.ToolCallDelta
		want   []chat.ToolCall
	}{
		{"one call, its arguments in pieces", [][]chat.ToolCallDelta{{{Index: 0, ID: "c1", Name: "f"}}, {{Index: 0, Arguments: `{"a":`}}, {{Index: 0, Arguments: `1}`}}},
			[]chat.ToolCall{{ID: "c1", Name: "f", Arguments: `{"a":1}`}}},
		{"the id and name repeated with every delta", [][]chat.ToolCallDelta{{{Index: 0, ID: "c1", Name: "f", Arguments: `{"a":`}}, {{Index: 0, ID: "c1", Name: "f", Arguments: `1}`}}},
			[]chat.ToolCall{{ID: "c1", Name: "f", Arguments: `{"a":1}`}}},
		{"two calls interleaved", [][]chat.ToolCallDelta{{{Index: 0, ID: "c1", Name: "f"}}, {{Index: 1, ID: "c2", Name: "g"}}, {{Index: 0, Arguments: `{"a":1}`}}, {{Index: 1, Arguments: `{"b":2}`}}},
			[]chat.ToolCall{{ID: "c1", Name: "f", Arguments: `{"a":1}`}, {ID: "c2", Name: "g", Arguments: `{"b":2}`}}},
		{"a name in pieces", [][]chat.ToolCallDelta{{{Index: 0, ID: "c1", Name: "get_"}}, {{Index: 0, Name: "weather"}}, {{Index: 0, Arguments: "{}"}}},
			[]chat.ToolCall{{ID: "c1", Name: "get_weather", Arguments: "{}"}}},
		{"the name repeated without the id", [][]chat.ToolCallDelta{{{Index: 0, ID: "c1", Name: "read_file"}}, {{Index: 0, Name: "read_file", Arguments: `{"a":`}},
			{{Index: 0, Name: "read_file", Arguments: "1}"}}}, []chat.ToolCall{{ID: "c1", Name: "read_file", Arguments: `{"a":1}`}}},
		{"every call at index 0, each its own id", [][]chat.ToolCallDelta{{{Index: 0, ID: "c1", Name: "f", Arguments: "{}"}}, {{Index: 0, ID: "c2", Name: "g"}},
			{{Index: 0, Arguments: `{"b":2}`}}}, []chat.ToolCall{{ID: "c1", Name: "f", Arguments: "{}"}, {ID: "c2", Name: "g", Arguments: `{"b":2}`}}},
		{"indexes from 1 with a gap", [][]chat.ToolCallDelta{{{Index: 1, ID: "c1", Name: "f"}}, {{Index: 3, ID: "c2", Name: "g", Arguments: "{}"}}},
			[]chat.ToolCall{{ID: "c1", Name: "f"}, {ID: "c2", Name: "g", Arguments: "{}"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var r chat.Result
			for _, d := range tt.deltas {
				r.Add(chat.Chunk{ToolCalls: d})
			}
			if !reflect.DeepEqual(r.ToolCalls, tt.want) {
				t.Fatalf("got %+v, want %+v", r.ToolCalls, tt.want)
			}
		})
	}
}

// TestPromptCountsWhatGoesUpstream: what a request sends upstream besides its messages and tools — its tool choice
// and response format, the fields passed on as they came, provider.options' text — is prompt a provider counts.
// The reservation holds it, an upstream's usage that counts it is plausible and billed, and a call without usage
// is billed for it at four bytes a token; the fields of Extra that the request's own fields hold are counted once.
// "hi" is 6 prompt tokens at its worst and 5 at four bytes a token; max_tokens 10; $1 a million tokens.
func TestPromptCountsWhatGoesUpstream(t *testing.T) {
	t.Parallel()
	one := domain.Micros(1_000_000)
	p := catalog.Pricing{PerMillionPromptTokens: &one, PerMillionCompletionTokens: &one}
	ten := int64(10)
	big := strings.Repeat("d", 40_000)
	schema := domain.Opaque(`{"type":"json_schema","json_schema":{"name":"x","schema":{"description":"` + big + `"}}}`)
	functions := domain.Opaque(`[{"name":"f","description":"` + big + `"}]`)
	for _, tt := range []struct {
		name  string
		set   func(*chat.Request)
		opts  map[string]any
		extra int64 // the bytes sent besides "hi"
	}{
		{"a response format's schema", func(r *chat.Request) { r.ResponseFormat = schema }, nil, int64(len(schema))},
		{"a tool choice", func(r *chat.Request) { r.ToolChoice = domain.Opaque(`"` + big + `"`) }, nil, 40_002},
		{"a field passed on (functions)", func(r *chat.Request) { r.Extra = map[string]domain.Opaque{"functions": functions} }, nil,
			int64(len(functions))},
		{"a field passed on (prediction)", func(r *chat.Request) {
			r.Extra = map[string]domain.Opaque{"prediction": domain.Opaque(`{"content":"` + big + `"}`)}
		}, nil, 40_014},
		{"an item aside", func(r *chat.Request) {
			r.Aside = []chat.Aside{{Raw: domain.Opaque(`{"output":"` + big + `"}`), Text: big}}
		}, nil, 40_013},
		{"an item aside with images: an image each", func(r *chat.Request) {
			raw := `{"output":"` + big + `","images":[{"image_url":"https://x/1.png"},{"image_url":"data:image/png;base64,` + big + `"}]}`
			r.Aside = []chat.Aside{{Raw: domain.Opaque(raw), Text: big, Images: 2, ImageBytes: len("https://x/1.png") + 22 + len(big)}}
		}, nil, int64(len(`{"output":"`+big+`","images":[{"image_url":""},{"image_url":""}]}`)) + 2*chat.ImageTokens},
		{"provider.options", func(*chat.Request) {}, map[string]any{"functions": []any{map[string]any{"description": big}}},
			int64(len("functions") + len("description") + len(big))},
		{"the fields the request holds, passed on as they came, counted once", func(r *chat.Request) {
			r.Extra = map[string]domain.Opaque{"messages": functions, "system": functions, "input": functions,
				"text": functions, "max_output_tokens": domain.Opaque("10"), "n": domain.Opaque("1")}
		}, nil, 0},
		{"tools the gateway does not read, passed on as they came", func(r *chat.Request) {
			r.Tools = []chat.Tool{{Name: "f"}}
			r.Extra = map[string]domain.Opaque{"tools": functions} // a custom tool's grammar, say, beside f
		}, nil, int64(len(functions))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := chat.Request{MaxTokens: &ten, Messages: []chat.Message{{Role: "user", Text: true,
				Content: []chat.Part{{Type: "text", Text: "hi"}}}}}
			tt.set(&r)
			if got, want := r.MaxPromptTokens(tt.opts), 6+tt.extra; got != want {
				t.Fatalf("MaxPromptTokens %d, want %d", got, want)
			}
			if got, want := r.Estimate(p, tt.opts), domain.Micros(6+tt.extra+10); got != want {
				t.Fatalf("reservation %d, want %d", got, want)
			}
			// An upstream counts what it was sent, at about four bytes a token.
			counted := chat.Usage{PromptTokens: 5 + tt.extra/4, CompletionTokens: 3}
			if b := r.Bill(p, tt.opts, &counted, 12); b.Estimated || b.Cost != domain.Micros(counted.PromptTokens+3) {
				t.Fatalf("billed %+v for the upstream's %+v: want its usage taken", b, counted)
			}
			if b := r.Bill(p, tt.opts, nil, 12); b.Usage.PromptTokens < 5+tt.extra/4 {
				t.Fatalf("without usage, billed %d prompt tokens, want at least %d", b.Usage.PromptTokens, 5+tt.extra/4)
			}
		})
	}
}
