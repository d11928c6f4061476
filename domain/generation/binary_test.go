package generation_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/domain/guardrail"
)

// fullEntry sets every field of an entry, each to a value of its own.
func fullEntry() generation.Entry {
	s := func(v string) *string { return &v }
	discount := domain.Micros(-7)
	at := time.Date(2026, 11, 23, 20, 6, 1, 123456789, time.UTC)
	attempt := func(p string) generation.Attempt {
		return generation.Attempt{ProviderName: p, EndpointID: p + "-e", UpstreamModel: p + "-m", UpstreamID: p + "-u",
			Status: 502, Latency: 1500 * time.Microsecond, BYOK: true, Error: "bad gateway", Raw: `{"e":1}`}
	}
	return generation.Entry{
		Record: generation.Record{ID: "gen-1-a", RequestID: "req", UpstreamID: "up", APIType: generation.Completions,
			WorkspaceID: "w", KeyHash: "k", UserID: s("user"), Model: "m", ProviderName: "openai", PresetID: s("preset"),
			Router: s("router"), Origin: "o", Referer: "ref", UserAgent: "ua", ExternalUser: "ext", SessionID: s("sess"),
			Status: 499, Streamed: true, Cancelled: true, BYOK: true, FinishReason: "stop", NativeFinishReason: "end_turn",
			Latency: time.Millisecond, GenerationTime: time.Second, ModerationLatency: 3 * time.Microsecond,
			Counts: generation.Counts{TokensPrompt: 1, TokensCompletion: 2, NativeTokensPrompt: 3, NativeTokensCompletion: 4,
				NativeTokensCompletionImages: 5, NativeTokensReasoning: 6, NativeTokensCached: 7, NumInputAudioPrompt: 8,
				NumMediaPrompt: 9, NumMediaCompletion: 10, NumSearchResults: 11, NumFetches: 12},
			TotalCost: 123456789, UpstreamCost: 23, CacheDiscount: &discount, DataRegion: "eu", ServiceTier: s("flex"),
			WebSearchEngine: s("exa"), Attempts: []generation.Attempt{attempt("a"), attempt("b")}, Flags: []string{"email", "phone"},
			CreatedAt: at},
		Content: &generation.Content{
			Input:   generation.Input{Messages: []generation.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hi"}}, Prompt: s("say hi")},
			Output:  generation.Output{Completion: "hello", Reasoning: s("thought")},
			Failure: &generation.Failure{Message: "all failed", Status: 502, ProviderName: s("openai"), Raw: s("raw"), Previous: []generation.Attempt{attempt("c")}},
		},
		Holds: []guardrail.Hold{{ID: "h1", GuardrailID: "g1", Window: at.Truncate(24 * time.Hour), Amount: 5},
			{ID: "h2", GuardrailID: "g2", Window: at, Amount: 6}},
	}
}

// TestFullEntrySetsEveryField: a field added to the entry's types is set by fullEntry, so that
// TestEntryBinary fails until the encoding carries it.
func TestFullEntrySetsEveryField(t *testing.T) {
	var walk func(path string, v reflect.Value)
	walk = func(path string, v reflect.Value) {
		if v.IsZero() {
			t.Errorf("fullEntry leaves %s unset", path)
			return
		}
		switch v.Kind() {
		case reflect.Pointer:
			walk(path, v.Elem())
		case reflect.Slice:
			for i := range v.Len() {
				walk(path+"[i]", v.Index(i))
			}
		case reflect.Struct:
			if v.Type() == reflect.TypeFor[time.Time]() {
				return
			}
			for i := range v.NumField() {
				walk(path+"."+v.Type().Field(i).Name, v.Field(i))
			}
		}
	}
	walk("Entry", reflect.ValueOf(fullEntry()))
}

// TestEntryBinary: an entry read back from its binary encoding is the entry, whatever its texts, numbers, times
// and nil or empty fields; every shorter prefix of the encoding, and the encoding with a byte more, is refused.
func TestEntryBinary(t *testing.T) {
	hostile := "\x00nul \xff\xfe invalid <b>&amp; \u2028\u2029 \"q\" \\ é 😀 \u007f"
	for _, tc := range []struct {
		name string
		edit func(e *generation.Entry)
	}{
		{"every field set", func(*generation.Entry) {}},
		{"every field zero", func(e *generation.Entry) { *e = generation.Entry{} }},
		{"every optional field nil", func(e *generation.Entry) {
			r := &e.Record
			r.UserID, r.PresetID, r.Router, r.SessionID, r.CacheDiscount, r.ServiceTier, r.WebSearchEngine = nil, nil, nil, nil, nil, nil, nil
			r.Attempts, r.Flags, e.Holds = nil, nil, nil
			e.Content.Input, e.Content.Output.Reasoning, e.Content.Failure = generation.Input{}, nil, nil
		}},
		{"empty slices and strings", func(e *generation.Entry) {
			empty := ""
			e.Record.Attempts, e.Record.Flags, e.Holds = []generation.Attempt{}, []string{}, []guardrail.Hold{}
			e.Record.UserID, e.Record.Model, e.Content.Input.Prompt = &empty, "", &empty
			e.Content.Input.Messages, e.Content.Failure.Previous = []generation.Message{}, []generation.Attempt{}
		}},
		{"no content", func(e *generation.Entry) { e.Content = nil }},
		{"hostile texts, as recorded", func(e *generation.Entry) {
			e.Record.UserAgent, e.Record.Flags, e.Record.Attempts[0].Raw = hostile, []string{hostile, ""}, hostile
			e.Content.Input.Messages[1].Content, e.Content.Output.Completion, e.Content.Failure.Raw = hostile, hostile, &hostile
		}},
		{"hostile texts, repaired", func(e *generation.Entry) {
			e.Record.UserAgent, e.Content.Output.Completion, e.Content.Failure.Raw = hostile, hostile, &hostile
			*e = e.Repaired()
		}},
		{"huge content", func(e *generation.Entry) {
			e.Content.Output.Completion = strings.Repeat("<é>", 3<<20)
			e.Content.Input.Messages = make([]generation.Message, 1000)
		}},
		{"extreme numbers", func(e *generation.Entry) {
			min := domain.Micros(math.MinInt64)
			e.Record.Status, e.Record.TotalCost, e.Record.CacheDiscount = math.MinInt, math.MaxInt64, &min
			e.Record.Latency, e.Record.Counts.NumFetches, e.Holds[0].Amount = math.MinInt64, math.MaxInt64, -1
			e.Content.Failure.Previous[0].Status = math.MaxInt
		}},
		{"times in other zones and the zero time", func(e *generation.Entry) {
			e.Record.CreatedAt = time.Date(2300, 1, 2, 3, 4, 5, 6, time.FixedZone("", -(9*3600+30*60+17)))
			e.Holds[0].Window, e.Holds[1].Window = time.Time{}, time.Date(1, 1, 1, 0, 0, 0, 1, time.FixedZone("", 14*3600))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := fullEntry()
			tc.edit(&want)
			b := want.AppendBinary([]byte{7})
			if b[0] != 7 {
				t.Fatal("AppendBinary overwrote what it appends to")
			}
			var got generation.Entry
			if err := got.UnmarshalBinary(b[1:]); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("read back\n%+v\nwant\n%+v", got, want)
			}
			b = b[1:]
			for n := range min(len(b), 2000) {
				if err := new(generation.Entry).UnmarshalBinary(b[:n]); err == nil {
					t.Fatalf("%d of %d bytes read as an entry", n, len(b))
				}
			}
			if err := new(generation.Entry).UnmarshalBinary(append(bytes.Clone(b), 0)); err == nil {
				t.Fatal("a byte past the entry is read")
			}
		})
	}
}

// TestEntryBinaryMalformed: encodings AppendBinary never writes are refused, without a panic or an allocation of
// what they claim.
func TestEntryBinaryMalformed(t *testing.T) {
	e := fullEntry()
	e.Content, e.Holds, e.Record.Flags = nil, nil, []string{"f"}
	short := e.AppendBinary(nil) // ends with CreatedAt (in UTC: a 0 after its seconds and nanoseconds), no content, no holds
	n := len(short)
	edit := func(i int, v ...byte) []byte { return append(append(bytes.Clone(short[:i]), v...), short[i+1:]...) }
	replace := func(was, now []byte) []byte {
		if bytes.Count(short, was) != 1 {
			t.Fatalf("% x is not once in the encoding", was)
		}
		return bytes.Replace(short, was, now, 1)
	}
	uvarint := func(v uint64) []byte { return binary.AppendUvarint(nil, v) }
	for name, b := range map[string][]byte{
		"empty":                   {},
		"a string past the end":   {0xff, 0xff, 0xff, 0xff, 0x0f, 'x'},
		"a varint past 64 bits":   {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		"a truncated varint":      {0x80},
		"a bool of 2":             edit(n-2, 2),
		"a zone flag of 2":        edit(n-3, 2),
		"a second of nanoseconds": replace(uvarint(123456789), uvarint(1e9)),
		"a billion flags":         replace([]byte("\x02\x01f"), append(uvarint(1e9+1), 1, 'f')),
		"a billion holds":         edit(n-1, uvarint(1e9+1)...),
		"two entries":             append(bytes.Clone(short), short...),
	} {
		t.Run(name, func(t *testing.T) {
			if err := new(generation.Entry).UnmarshalBinary(b); err == nil {
				t.Fatalf("% x read as an entry", b)
			}
		})
	}
}

// FuzzEntryBinary: whatever bytes come, UnmarshalBinary returns without a panic, and what it reads encodes to
// bytes it reads as the same entry.
func FuzzEntryBinary(f *testing.F) {
	e := fullEntry()
	for _, v := range []generation.Entry{e, {}, {Content: &generation.Content{}}} {
		f.Add(v.AppendBinary(nil))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var e generation.Entry
		if e.UnmarshalBinary(b) != nil {
			return
		}
		var e2 generation.Entry
		if err := e2.UnmarshalBinary(e.AppendBinary(nil)); err != nil {
			t.Fatalf("re-encoded entry refused: %v", err)
		}
		if !reflect.DeepEqual(e, e2) {
			t.Fatalf("re-encoded entry reads back as\n%+v\nnot\n%+v", e2, e)
		}
	})
}
