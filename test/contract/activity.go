package contract

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/ports"
)

// activityEntry is a call of key (its workspace and member as keys gives them) on model, answered by provider (none:
// it reached no provider), costing cost micros.
func activityEntry(suffix string, at time.Time, key, model, provider string, cost int64, byok bool) generation.Entry {
	keys := map[string][2]string{"k1": {"w1", "u1"}, "k2": {"w1", ""}, "k3": {"w2", "u2"}}
	r := generation.Record{ID: ID(at, suffix), APIType: generation.Completions, WorkspaceID: keys[key][0], KeyHash: key,
		Model: model, ProviderName: provider, Status: 200, BYOK: byok, TotalCost: domain.Micros(cost), CreatedAt: at,
		Counts: generation.Counts{TokensPrompt: 10, TokensCompletion: 20, NativeTokensReasoning: 3, NativeTokensCached: 4}}
	if u := keys[key][1]; u != "" {
		r.UserID = &u
	}
	if provider != "" {
		r.Attempts = []generation.Attempt{{ProviderName: "elsewhere", EndpointID: "elsewhere/x", Status: 502},
			{ProviderName: provider, EndpointID: provider + "/" + model, Status: 200}}
	} else {
		r.Status = 402
	}
	return generation.Entry{Record: r}
}

// usage is n calls of activityEntry's tokens, costing cost, byok of it with the caller's provider key.
func usage(n, cost, byok int64) generation.Usage {
	return generation.Usage{Requests: n, PromptTokens: 10 * n, CompletionTokens: 20 * n, ReasoningTokens: 3 * n,
		CachedTokens: 4 * n, Cost: domain.Micros(cost), BYOKCost: domain.Micros(byok)}
}

// ActivityStore checks the activity kept as records are written: sums by every dimension and filter, the days
// a filter's times select, replays that count nothing twice, and writers at once that count everything once.
func ActivityStore(t *testing.T, newStore func(t *testing.T) Generations) {
	ctx := context.Background()
	s := newStore(t)
	d1, d2, d3 := t0.Add(-48*time.Hour), t0.Add(-24*time.Hour), t0 // 2026-03-16, -17 and -18, at 15:04
	batch := []generation.Entry{
		activityEntry("a", d1, "k1", "m1", "p1", 100, false),
		activityEntry("b", d1, "k1", "m1", "p1", 200, true),
		activityEntry("c", d1.Add(8*time.Hour+55*time.Minute), "k2", "m2", "p2", 300, false), // 23:59:05
		activityEntry("d", d2, "k3", "m1", "p2", 400, false),
		activityEntry("e", d2, "k1", "m1", "", 0, false),
		activityEntry("f", d3, "k2", "m1", "p1", 500, false),
	}
	if err := s.InsertGenerations(ctx, batch[:4]); err != nil {
		t.Fatal(err)
	}
	// A replay of stored entries with new ones: only the new ones count.
	if err := s.InsertGenerations(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertGenerations(ctx, batch[2:3]); err != nil {
		t.Fatal(err)
	}
	day := generation.Day
	row := func(k generation.ActivityKey, u generation.Usage) generation.Activity {
		return generation.Activity{ActivityKey: k, Usage: u}
	}
	for _, tc := range []struct {
		name string
		f    ports.ActivityFilter
		want []generation.Activity
	}{
		{"by day, model and endpoint (the reference's /activity)", ports.ActivityFilter{From: d1, To: d3.Add(time.Minute),
			GroupBy: ports.ByDay | ports.ByModel | ports.ByProvider | ports.ByEndpoint}, []generation.Activity{
			row(generation.ActivityKey{Day: day(d1), Model: "m1", ProviderName: "p1", EndpointID: "p1/m1"}, usage(2, 300, 200)),
			row(generation.ActivityKey{Day: day(d1), Model: "m2", ProviderName: "p2", EndpointID: "p2/m2"}, usage(1, 300, 0)),
			row(generation.ActivityKey{Day: day(d2), Model: "m1"}, usage(1, 0, 0)),
			row(generation.ActivityKey{Day: day(d2), Model: "m1", ProviderName: "p2", EndpointID: "p2/m1"}, usage(1, 400, 0)),
			row(generation.ActivityKey{Day: day(d3), Model: "m1", ProviderName: "p1", EndpointID: "p1/m1"}, usage(1, 500, 0)),
		}},
		{"by workspace, key and member", ports.ActivityFilter{GroupBy: ports.ByWorkspace | ports.ByKey | ports.ByUser},
			[]generation.Activity{
				row(generation.ActivityKey{WorkspaceID: "w1", KeyHash: "k1", UserID: "u1"}, usage(3, 300, 200)),
				row(generation.ActivityKey{WorkspaceID: "w1", KeyHash: "k2"}, usage(2, 800, 0)),
				row(generation.ActivityKey{WorkspaceID: "w2", KeyHash: "k3", UserID: "u2"}, usage(1, 400, 0)),
			}},
		{"a workspace's spend since a day (a budget's window)", ports.ActivityFilter{WorkspaceID: "w1", From: d2},
			[]generation.Activity{row(generation.ActivityKey{}, usage(2, 500, 0))}},
		{"a key's, by day", ports.ActivityFilter{KeyHash: "k1", GroupBy: ports.ByDay}, []generation.Activity{
			row(generation.ActivityKey{Day: day(d1)}, usage(2, 300, 200)),
			row(generation.ActivityKey{Day: day(d2)}, usage(1, 0, 0)),
		}},
		{"a member's", ports.ActivityFilter{UserID: "u2"}, []generation.Activity{row(generation.ActivityKey{}, usage(1, 400, 0))}},
		{"a model's and provider's", ports.ActivityFilter{Model: "m1", ProviderName: "p1", GroupBy: ports.ByKey}, []generation.Activity{
			row(generation.ActivityKey{KeyHash: "k1"}, usage(2, 300, 200)),
			row(generation.ActivityKey{KeyHash: "k2"}, usage(1, 500, 0)),
		}},
		// To ends the days at its instant: a day whose midnight comes before it counts, one at it does not.
		{"one day, by an instant in the next", ports.ActivityFilter{From: d2.Add(5 * time.Hour), To: day(d3), GroupBy: ports.ByDay},
			[]generation.Activity{row(generation.ActivityKey{Day: day(d2)}, usage(2, 400, 0))}},
		{"to an instant within a day", ports.ActivityFilter{From: d3, To: d3.Add(-time.Hour), GroupBy: ports.ByDay},
			[]generation.Activity{row(generation.ActivityKey{Day: day(d3)}, usage(1, 500, 0))}},
		{"everything", ports.ActivityFilter{}, []generation.Activity{row(generation.ActivityKey{}, usage(6, 1500, 200))}},
		{"nothing", ports.ActivityFilter{KeyHash: "nobody", GroupBy: ports.ByDay}, nil},
		{"nothing, summed", ports.ActivityFilter{From: d3.AddDate(0, 0, 1)}, nil},
	} {
		got, err := s.Activity(ctx, tc.f)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 0 || len(tc.want) != 0 {
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
			}
		}
	}

	// Writers at once, each with entries of the same rows in its batches, count every entry once.
	const writers, batches, size = 4, 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for b := range batches {
				var es []generation.Entry
				for i := range size {
					key := []string{"k1", "k2", "k3"}[(w+i)%3]
					es = append(es, activityEntry(fmt.Sprintf("w%d-%d-%d", w, b, i), d3.Add(time.Duration(i)*time.Second), key, "m3", "p3", 7, false))
				}
				if err := s.InsertGenerations(ctx, es); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := s.Activity(ctx, ports.ActivityFilter{Model: "m3"})
	const n = writers * batches * size
	if want := []generation.Activity{row(generation.ActivityKey{}, usage(n, 7*n, 0))}; err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("writers at once: %+v (%v), want %+v", got, err, want)
	}
}

// ActivityMatchesRecords checks that a key's activity adds up to its records (read through the list, a page at a
// time): one request a record, and their tokens and cost. It returns the records' count and cost.
func ActivityMatchesRecords(t testing.TB, s interface {
	ports.GenerationList
	ports.ActivityStore
}, keyHash string) (int64, domain.Micros) {
	t.Helper()
	ctx := context.Background()
	var records generation.Usage
	f := ports.GenerationFilter{KeyHash: keyHash, Limit: generation.MaxPage}
	for {
		page, err := s.ListGenerations(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		for i := range page.Records {
			records = records.Add(page.Records[i].Activity().Usage)
		}
		if page.Next == nil {
			break
		}
		f.After = page.Next
	}
	// The key's total, and its rows by model (which a store may keep in another table), each agree.
	for _, by := range []ports.ActivityGroup{0, ports.ByModel} {
		sums, err := s.Activity(ctx, ports.ActivityFilter{KeyHash: keyHash, GroupBy: by})
		if err != nil {
			t.Fatal(err)
		}
		var activity generation.Usage
		for _, a := range sums {
			activity = activity.Add(a.Usage)
		}
		if activity != records {
			t.Errorf("key %s, grouped by %v: activity %+v, its records add up to %+v", keyHash, by, activity, records)
		}
	}
	return records.Requests, records.Cost
}
