package generation_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/generation"
)

func TestIDTime(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 18, 15, 4, 5, 999_999_999, time.FixedZone("X", 3600))
	for _, tc := range []struct {
		id   string
		want time.Time
		ok   bool
	}{
		{generation.NewID(at, "0f-9a"), time.Date(2026, 3, 18, 14, 4, 5, 0, time.UTC), true},
		{"gen-0-x", time.Unix(0, 0).UTC(), true},
		{"gen-1773846245-", time.Unix(1773846245, 0).UTC(), true},
		{"gen-999999999999-x", time.Unix(999999999999, 0).UTC(), true},
		{"gen-9999999999999-x", time.Time{}, false}, // past twelve digits
		{"gen-1773846245", time.Time{}, false},
		{"gen--x", time.Time{}, false},
		{"gen-+5-x", time.Time{}, false},
		{"gen--5-x", time.Time{}, false},
		{"gen-vid-1773846245-x", time.Time{}, false},
		{"gen-12a-x", time.Time{}, false},
		{"GEN-1-x", time.Time{}, false},
		{"", time.Time{}, false},
	} {
		got, ok := generation.IDTime(tc.id)
		if ok != tc.ok || !got.Equal(tc.want) || (ok && got.Location() != time.UTC) {
			t.Errorf("IDTime(%q) = %v, %t; want %v, %t", tc.id, got, ok, tc.want, tc.ok)
		}
	}
}

// TestAggregate: a record counts one request with its tokens and cost in the row of its UTC day, key and answering
// endpoint (its last attempt's); rows come summed and in their keys' order, whatever the entries' order.
func TestAggregate(t *testing.T) {
	t.Parallel()
	member := "user_1"
	day := time.Date(2026, 3, 18, 0, 0, 0, 0, time.UTC)
	rec := func(at time.Time, key string, cost domain.Micros, byok bool, attempts ...string) generation.Entry {
		r := generation.Record{KeyHash: key, WorkspaceID: "w", Model: "m", ProviderName: "p", TotalCost: cost, BYOK: byok, CreatedAt: at,
			Counts: generation.Counts{TokensPrompt: 1, TokensCompletion: 2, NativeTokensReasoning: 3, NativeTokensCached: 4, NativeTokensPrompt: 100}}
		if key == "k1" {
			r.UserID = &member
		}
		for _, a := range attempts {
			r.Attempts = append(r.Attempts, generation.Attempt{EndpointID: a})
		}
		return generation.Entry{Record: r}
	}
	late := day.Add(23*time.Hour + 59*time.Minute).In(time.FixedZone("Y", -5*3600)) // still the 18th in UTC
	got := generation.Aggregate([]generation.Entry{
		rec(day.Add(24*time.Hour), "k1", 5, false, "p/x"),
		rec(late, "k2", 7, true),
		rec(day, "k1", 10, false, "q/y", "p/x"),
		rec(day.Add(time.Hour), "k1", 20, true, "p/x"),
	})
	u := func(n int64, cost, byok domain.Micros) generation.Usage {
		return generation.Usage{Requests: n, PromptTokens: n, CompletionTokens: 2 * n, ReasoningTokens: 3 * n, CachedTokens: 4 * n,
			Cost: cost, BYOKCost: byok}
	}
	key := func(d time.Time, k, user, endpoint string) generation.ActivityKey {
		return generation.ActivityKey{Day: d, WorkspaceID: "w", KeyHash: k, UserID: user, Model: "m", ProviderName: "p", EndpointID: endpoint}
	}
	want := []generation.Activity{
		{ActivityKey: key(day, "k1", member, "p/x"), Usage: u(2, 30, 20)},
		{ActivityKey: key(day, "k2", "", ""), Usage: u(1, 7, 7)},
		{ActivityKey: key(day.Add(24*time.Hour), "k1", member, "p/x"), Usage: u(1, 5, 0)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Aggregate\n got %+v\nwant %+v", got, want)
	}
	// A workspace's rows sum its keys'.
	ws := func(d time.Time, endpoint string) generation.ActivityKey { return key(d, "", "", endpoint) }
	if sums, want := generation.Sum(got, generation.WorkspaceKey), []generation.Activity{
		{ActivityKey: ws(day, ""), Usage: u(1, 7, 7)},
		{ActivityKey: ws(day, "p/x"), Usage: u(2, 30, 20)},
		{ActivityKey: ws(day.Add(24*time.Hour), "p/x"), Usage: u(1, 5, 0)},
	}; !reflect.DeepEqual(sums, want) {
		t.Fatalf("Sum by workspace\n got %+v\nwant %+v", sums, want)
	}
	if got := generation.Aggregate(nil); len(got) != 0 {
		t.Fatalf("Aggregate of nothing: %+v", got)
	}
}

func TestCursor(t *testing.T) {
	t.Parallel()
	c := generation.Cursor{CreatedAt: time.Date(2026, 3, 18, 15, 4, 5, 123456000, time.UTC), ID: "gen-1773846245-ab.c"}
	got, err := generation.ParseCursor(c.String())
	if err != nil || got != c {
		t.Fatalf("a cursor read back as %+v (%v), want %+v", got, err, c)
	}
	for _, bad := range []string{"", "!!", "bm9wZQ", c.String() + "=", "MTIzLg", "eC5nZW4", "MS4A"} { // "nope", "123.", "x.gen", "1.\x00"
		if _, err := generation.ParseCursor(bad); domain.KindOf(err) != domain.KindInvalid {
			t.Errorf("ParseCursor(%q) = %v, want an invalid cursor", bad, err)
		}
	}
	older := &generation.Record{ID: "b", CreatedAt: c.CreatedAt.Add(-time.Microsecond)}
	tie, tieAfter := &generation.Record{ID: "gen-1773846245-ab.b", CreatedAt: c.CreatedAt}, &generation.Record{ID: "gen-1773846245-ab.d", CreatedAt: c.CreatedAt}
	newer := &generation.Record{ID: "a", CreatedAt: c.CreatedAt.Add(time.Microsecond)}
	if !c.After(older) || !c.After(tie) || c.After(tieAfter) || c.After(newer) || c.After(&generation.Record{ID: c.ID, CreatedAt: c.CreatedAt}) {
		t.Fatal("After orders records newest first, ties by id")
	}
}
