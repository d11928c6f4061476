package contract

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/ports"
)

// FullEntry sets every field a generation entry stores.
func FullEntry(id string, at time.Time) generation.Entry {
	session, preset, provider, raw, tier := "s", "p", "openai", `{"e":1}`, "flex"
	discount := domain.Micros(7)
	prompt := "say hi"
	reasoning := "thought"
	return generation.Entry{
		Record: generation.Record{ID: id, RequestID: "r", UpstreamID: "u", APIType: generation.Video, WorkspaceID: "w",
			KeyHash: "k", UserID: &session, Model: "m", ProviderName: "openai", PresetID: &preset, Router: &tier,
			Origin: "o", Referer: "ref", UserAgent: "ua", ExternalUser: "ext", SessionID: &session, Status: 502,
			Streamed: true, Cancelled: true, BYOK: true, FinishReason: "error", NativeFinishReason: "x",
			Latency: 1500 * time.Microsecond, GenerationTime: time.Second, ModerationLatency: time.Millisecond,
			Counts: generation.Counts{TokensPrompt: 1, TokensCompletion: 2, NativeTokensPrompt: 3, NativeTokensCompletion: 4,
				NativeTokensCompletionImages: 5, NativeTokensReasoning: 6, NativeTokensCached: 7, NumInputAudioPrompt: 8,
				NumMediaPrompt: 9, NumMediaCompletion: 10, NumSearchResults: 11, NumFetches: 12},
			TotalCost: 123456789, UpstreamCost: 23, CacheDiscount: &discount, DataRegion: "global", ServiceTier: &tier,
			WebSearchEngine: &tier, Flags: []string{"email", "phone"},
			Attempts: []generation.Attempt{{ProviderName: "openai", EndpointID: "e", UpstreamModel: "um", UpstreamID: "u",
				Status: 502, Latency: time.Millisecond, BYOK: true, Error: "bad gateway"}},
			CreatedAt: at},
		Content: &generation.Content{
			Input:  generation.Input{Prompt: &prompt},
			Output: generation.Output{Completion: "hi", Reasoning: &reasoning},
			Failure: &generation.Failure{Message: "all failed", Status: 502, ProviderName: &provider, Raw: &raw,
				Previous: []generation.Attempt{{ProviderName: "openai", Status: 500, Error: "boom", Raw: raw, Latency: time.Millisecond}}},
		},
	}
}

// GenerationStore checks generation records: a full round trip of record and content, ids stored once,
// unknown ids, and purges in slices.
func GenerationStore(t *testing.T, newStore func(t *testing.T) ports.GenerationStore) {
	ctx := context.Background()
	s := newStore(t)
	old, recent := t0.Add(-48*time.Hour), t0
	a, b := FullEntry("gen-1-a", recent), FullEntry("gen-1-b", old)
	b.Content.Input = generation.Input{Messages: []generation.Message{{Role: "user", Content: "hello"}}}
	b.Content.Failure = nil
	c := FullEntry("gen-1-c", old)
	c.Content = nil
	if err := s.InsertGenerations(ctx, []generation.Entry{a, b, c}); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertGenerations(ctx, []generation.Entry{a}); err != nil {
		t.Fatalf("re-inserting a stored id must be a no-op: %v", err)
	}
	got, err := s.Generation(ctx, "gen-1-a")
	if err != nil {
		t.Fatal(err)
	}
	want := a.Record
	want.Attempts[0].Raw = "" // error bodies live with the content only
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("record round trip\n got %+v\nwant %+v", got, want)
	}
	content, err := s.GenerationContent(ctx, "gen-1-a")
	if err != nil || !reflect.DeepEqual(content, *a.Content) {
		t.Fatalf("content round trip\n got %+v\nwant %+v (%v)", content, *a.Content, err)
	}
	if content, _ := s.GenerationContent(ctx, "gen-1-b"); !reflect.DeepEqual(content, *b.Content) {
		t.Fatalf("messages round trip: %+v", content)
	}
	if _, err := s.GenerationContent(ctx, "gen-1-c"); !errors.Is(err, generation.ErrNotFound) {
		t.Fatalf("content not stored: err = %v", err)
	}
	if _, err := s.Generation(ctx, "nope"); !errors.Is(err, generation.ErrNotFound) {
		t.Fatalf("unknown id: err = %v", err)
	}

	// Purges take everything created before the cutoff, content included, at most limit at a time.
	for i, want := range []int64{1, 1, 0} {
		if n, err := s.PurgeGenerations(ctx, t0.Add(-24*time.Hour), 1); err != nil || n != want {
			t.Fatalf("purge %d removed %d records (%v), want %d", i, n, err, want)
		}
	}
	if _, err := s.Generation(ctx, "gen-1-b"); !errors.Is(err, generation.ErrNotFound) {
		t.Fatal("an old record survived the purge")
	}
	if _, err := s.GenerationContent(ctx, "gen-1-b"); !errors.Is(err, generation.ErrNotFound) {
		t.Fatal("an old record's content survived the purge")
	}
	if _, err := s.Generation(ctx, "gen-1-a"); err != nil {
		t.Fatalf("a recent record was purged: %v", err)
	}
}
