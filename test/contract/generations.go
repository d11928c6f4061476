package contract

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
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

// ID is a generation id made at a time, as the gateway makes one: stores that keep records by time find a record
// by the time its id carries.
func ID(at time.Time, suffix string) string { return generation.NewID(at, suffix) }

// Generations is what the generation contract checks: the store, its retention, its list and its activity.
type Generations interface {
	ports.GenerationStore
	ports.GenerationRetention
	ports.GenerationList
	ports.ActivityStore
}

// Purge calls a purge a slice of limit at a time until one comes back short, as app.Retention does.
func Purge(t *testing.T, f func(context.Context, time.Time, int) (int64, error), before time.Time, limit int) {
	t.Helper()
	for range 100 {
		n, err := f(context.Background(), before, limit)
		if err != nil {
			t.Fatal(err)
		}
		if n < int64(limit) {
			return
		}
	}
	t.Fatal("a purge never came back short")
}

// GenerationStore checks generation records: a full round trip of record and content, ids stored once, unknown
// ids, and retention: contents before their records, at a day's bound or within a day.
func GenerationStore(t *testing.T, newStore func(t *testing.T) Generations) {
	ctx := context.Background()
	s := newStore(t)
	old, recent := t0.Add(-48*time.Hour), t0
	a, b := FullEntry(ID(recent, "a"), recent), FullEntry(ID(old, "b"), old)
	b.Content.Input = generation.Input{Messages: []generation.Message{{Role: "user", Content: "hello"}}}
	b.Content.Failure = nil
	c := FullEntry(ID(old, "c"), old)
	c.Content = nil
	// Either side of t0-24h, on the day it cuts.
	before, after := FullEntry(ID(t0.Add(-29*time.Hour), "d"), t0.Add(-29*time.Hour)), FullEntry(ID(t0.Add(-19*time.Hour), "e"), t0.Add(-19*time.Hour))
	if err := s.InsertGenerations(ctx, []generation.Entry{a, b, c, before, after}); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertGenerations(ctx, []generation.Entry{a}); err != nil {
		t.Fatalf("re-inserting a stored id must be a no-op: %v", err)
	}
	got, err := s.Generation(ctx, a.Record.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := a.Record
	want.Attempts = slices.Clone(want.Attempts)
	want.Attempts[0].Raw = "" // error bodies live with the content only
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("record round trip\n got %+v\nwant %+v", got, want)
	}
	content, err := s.GenerationContent(ctx, a.Record.ID)
	if err != nil || !reflect.DeepEqual(content, *a.Content) {
		t.Fatalf("content round trip\n got %+v\nwant %+v (%v)", content, *a.Content, err)
	}
	if content, _ := s.GenerationContent(ctx, b.Record.ID); !reflect.DeepEqual(content, *b.Content) {
		t.Fatalf("messages round trip: %+v", content)
	}
	if _, err := s.GenerationContent(ctx, c.Record.ID); !errors.Is(err, generation.ErrNotFound) {
		t.Fatalf("content not stored: err = %v", err)
	}
	for _, id := range []string{"nope", "gen-1-nope", ID(t0, "nope"), ID(t0.AddDate(-3, 0, 0), "nope"), "gen-99999999999999999999-x"} {
		if _, err := s.Generation(ctx, id); !errors.Is(err, generation.ErrNotFound) {
			t.Fatalf("unknown id %s: err = %v", id, err)
		}
		if _, err := s.GenerationContent(ctx, id); !errors.Is(err, generation.ErrNotFound) {
			t.Fatalf("content of unknown id %s: err = %v", id, err)
		}
	}

	// Contents go first: before the start of t0's day, the content of every record of an earlier day.
	Purge(t, s.PurgeContents, generation.Day(t0), 1)
	for _, e := range []generation.Entry{b, before, after} {
		if _, err := s.GenerationContent(ctx, e.Record.ID); !errors.Is(err, generation.ErrNotFound) {
			t.Fatalf("the content of %s (%v) survived its purge: %v", e.Record.ID, e.Record.CreatedAt, err)
		}
		if _, err := s.Generation(ctx, e.Record.ID); err != nil {
			t.Fatalf("a content purge took the record %s: %v", e.Record.ID, err)
		}
	}
	if _, err := s.GenerationContent(ctx, a.Record.ID); err != nil {
		t.Fatalf("a recent content was purged: %v", err)
	}
	// Records before t0-24h go, with their contents; those after, in the same day, stay.
	Purge(t, s.PurgeGenerations, t0.Add(-24*time.Hour), 1)
	for _, e := range []generation.Entry{b, c, before} {
		if _, err := s.Generation(ctx, e.Record.ID); !errors.Is(err, generation.ErrNotFound) {
			t.Fatalf("the old record %s (%v) survived the purge: %v", e.Record.ID, e.Record.CreatedAt, err)
		}
	}
	for _, e := range []generation.Entry{a, after} {
		if _, err := s.Generation(ctx, e.Record.ID); err != nil {
			t.Fatalf("the recent record %s was purged: %v", e.Record.ID, err)
		}
	}
	if _, err := s.GenerationContent(ctx, a.Record.ID); err != nil {
		t.Fatalf("a recent content was purged: %v", err)
	}
	// A record stored again after its day was purged (an old entry replayed) is stored, and found.
	if err := s.InsertGenerations(ctx, []generation.Entry{b}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Generation(ctx, b.Record.ID); err != nil {
		t.Fatalf("a record written after its day was purged: %v", err)
	}
}

// GenerationList checks the list of records: every filter, newest first, and pages that hand over by cursor
// without losing or repeating a record, records of the same instant included.
func GenerationList(t *testing.T, newStore func(t *testing.T) Generations) {
	ctx := context.Background()
	s := newStore(t)
	var all []generation.Entry
	for i := range 60 {
		// Ten days, three keys, two models, and three records at each instant.
		at := t0.Add(-time.Duration(i/3) * 4 * time.Hour)
		e := FullEntry(ID(at, fmt.Sprintf("l%02d", i)), at)
		e.Record.KeyHash = fmt.Sprintf("k%d", i%3)
		e.Record.Model = []string{"m1", "m2"}[i%2]
		e.Record.ProviderName = []string{"openai", "anthropic", "openai", "google"}[i%4]
		e.Record.WorkspaceID = []string{"w1", "w2"}[i%5/4]
		e.Record.Status = []int{200, 200, 502}[i%3]
		session, user, member := fmt.Sprintf("s%d", i%4), fmt.Sprintf("u%d", i%6), fmt.Sprintf("m%d", i%2)
		e.Record.SessionID, e.Record.ExternalUser, e.Record.UserID = &session, user, &member
		if i%7 == 0 {
			e.Record.SessionID, e.Record.UserID = nil, nil
		}
		all = append(all, e)
	}
	for i := 0; i < len(all); i += 16 {
		if err := s.InsertGenerations(ctx, all[i:min(i+16, len(all))]); err != nil {
			t.Fatal(err)
		}
	}
	newestFirst := slices.Clone(all)
	slices.SortFunc(newestFirst, func(a, b generation.Entry) int {
		return cmp.Or(b.Record.CreatedAt.Compare(a.Record.CreatedAt), strings.Compare(b.Record.ID, a.Record.ID))
	})
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	for _, tc := range []struct {
		name string
		f    ports.GenerationFilter
		keep func(r *generation.Record) bool
	}{
		{"all", ports.GenerationFilter{}, func(*generation.Record) bool { return true }},
		{"a key over two days", ports.GenerationFilter{KeyHash: "k1", From: t0.Add(-47 * time.Hour), To: t0.Add(-4 * time.Hour)},
			func(r *generation.Record) bool {
				return r.KeyHash == "k1" && !r.CreatedAt.Before(t0.Add(-47*time.Hour)) && r.CreatedAt.Before(t0.Add(-4*time.Hour))
			}},
		{"a model", ports.GenerationFilter{Model: "m2"}, func(r *generation.Record) bool { return r.Model == "m2" }},
		{"a provider", ports.GenerationFilter{ProviderName: "openai"}, func(r *generation.Record) bool { return r.ProviderName == "openai" }},
		{"a workspace", ports.GenerationFilter{WorkspaceID: "w2"}, func(r *generation.Record) bool { return r.WorkspaceID == "w2" }},
		{"a status", ports.GenerationFilter{Status: 502}, func(r *generation.Record) bool { return r.Status == 502 }},
		{"a session", ports.GenerationFilter{SessionID: "s1"}, func(r *generation.Record) bool { return str(r.SessionID) == "s1" }},
		{"a member", ports.GenerationFilter{UserID: "m0"}, func(r *generation.Record) bool { return str(r.UserID) == "m0" }},
		{"a caller's user", ports.GenerationFilter{ExternalUser: "u5"}, func(r *generation.Record) bool { return r.ExternalUser == "u5" }},
		{"everything at once", ports.GenerationFilter{KeyHash: "k0", Model: "m2", ProviderName: "openai", Status: 200,
			From: t0.Add(-10 * 24 * time.Hour), To: t0.Add(time.Hour)},
			func(r *generation.Record) bool {
				return r.KeyHash == "k0" && r.Model == "m2" && r.ProviderName == "openai" && r.Status == 200
			}},
		{"nothing", ports.GenerationFilter{KeyHash: "nobody"}, func(*generation.Record) bool { return false }},
	} {
		var want []string
		for i := range newestFirst {
			if tc.keep(&newestFirst[i].Record) {
				want = append(want, newestFirst[i].Record.ID)
			}
		}
		for _, size := range []int{1, 4, 7, 100} {
			f := tc.f
			f.Limit = size
			var got []string
			for pages := 0; ; pages++ {
				if pages > len(all) {
					t.Fatalf("%s, pages of %d: the cursor never ends", tc.name, size)
				}
				page, err := s.ListGenerations(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				if len(page.Records) > size {
					t.Fatalf("%s: a page of %d records for a limit of %d", tc.name, len(page.Records), size)
				}
				for _, r := range page.Records {
					got = append(got, r.ID)
				}
				if page.Next == nil {
					break
				}
				f.After = page.Next
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s, pages of %d:\n got %v\nwant %v", tc.name, size, got, want)
			}
		}
	}
	// A page holds whole records, and the default and largest pages.
	page, err := s.ListGenerations(ctx, ports.GenerationFilter{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	wantRec := newestFirst[0].Record
	wantRec.Attempts = slices.Clone(wantRec.Attempts)
	wantRec.Attempts[0].Raw = ""
	if len(page.Records) != 1 || !reflect.DeepEqual(page.Records[0], wantRec) {
		t.Fatalf("the newest record in a list\n got %+v\nwant %+v", page.Records, wantRec)
	}
	if page, err := s.ListGenerations(ctx, ports.GenerationFilter{}); err != nil || len(page.Records) != generation.DefaultPage {
		t.Fatalf("a page with no limit holds %d records (%v), want %d", len(page.Records), err, generation.DefaultPage)
	}
	if page, err := s.ListGenerations(ctx, ports.GenerationFilter{Limit: generation.MaxPage + 1}); err != nil || len(page.Records) != len(all) {
		t.Fatalf("a page past the largest: %d records (%v)", len(page.Records), err)
	}
}
