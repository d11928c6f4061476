package memstore

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/ports"
)

// Generations keeps generation records, their contents and their activity: the store's write (records and
// activity together, ids stored once), its reads and its retention. Charges are the other stores' (Usage,
// Credits) and are not booked here.
type Generations struct {
	mu       sync.Mutex
	records  map[string]generation.Record
	contents map[string]generation.Content
	activity map[generation.ActivityKey]generation.Usage
}

var (
	_ ports.GenerationStore     = (*Generations)(nil)
	_ ports.GenerationRetention = (*Generations)(nil)
	_ ports.GenerationList      = (*Generations)(nil)
	_ ports.ActivityStore       = (*Generations)(nil)
)

func (g *Generations) InsertGenerations(_ context.Context, batch []generation.Entry) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.records == nil {
		g.records, g.contents = map[string]generation.Record{}, map[string]generation.Content{}
		g.activity = map[generation.ActivityKey]generation.Usage{}
	}
	fresh := make([]generation.Entry, 0, len(batch))
	for _, e := range batch {
		if _, ok := g.records[e.Record.ID]; ok {
			continue // stored before: a replay
		}
		r := e.Record
		r.CreatedAt = r.CreatedAt.UTC()
		r.Attempts, r.Flags = slices.Clone(r.Attempts), slices.Clone(r.Flags)
		for i := range r.Attempts {
			r.Attempts[i].Raw = "" // error bodies live with the content only
		}
		if r.Flags == nil { // as a database stores an empty list
			r.Flags = []string{}
		}
		if r.Attempts == nil {
			r.Attempts = []generation.Attempt{}
		}
		g.records[r.ID] = r
		if e.Content != nil {
			g.contents[r.ID] = *e.Content
		}
		fresh = append(fresh, e)
	}
	for _, a := range generation.Aggregate(fresh) {
		g.activity[a.ActivityKey] = g.activity[a.ActivityKey].Add(a.Usage)
	}
	return nil
}

func (g *Generations) Ping(context.Context) error { return nil }

func (g *Generations) Generation(_ context.Context, id string) (generation.Record, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r, ok := g.records[id]
	if !ok {
		return generation.Record{}, generation.ErrNotFound
	}
	r.Attempts, r.Flags = slices.Clone(r.Attempts), slices.Clone(r.Flags)
	return r, nil
}

func (g *Generations) GenerationContent(_ context.Context, id string) (generation.Content, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.contents[id]
	if !ok {
		return generation.Content{}, generation.ErrNotFound
	}
	return c, nil
}

func (g *Generations) PrepareDays(context.Context, time.Time, time.Time) error { return nil }

// PurgeContents removes up to limit contents of records created before before, oldest first.
func (g *Generations) PurgeContents(_ context.Context, before time.Time, limit int) (int64, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	old := g.oldest(before, limit, func(id string) bool { _, ok := g.contents[id]; return ok })
	for _, id := range old {
		delete(g.contents, id)
	}
	return int64(len(old)), nil
}

// PurgeGenerations removes up to limit records created before before, oldest first, with their contents.
func (g *Generations) PurgeGenerations(_ context.Context, before time.Time, limit int) (int64, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	old := g.oldest(before, limit, func(string) bool { return true })
	for _, id := range old {
		delete(g.records, id)
		delete(g.contents, id)
	}
	return int64(len(old)), nil
}

// oldest are the ids of up to limit records created before before that pass keep, oldest first.
func (g *Generations) oldest(before time.Time, limit int, keep func(id string) bool) []string {
	var old []generation.Record
	for id, r := range g.records {
		if r.CreatedAt.Before(before) && keep(id) {
			old = append(old, r)
		}
	}
	slices.SortFunc(old, func(a, b generation.Record) int { return a.CreatedAt.Compare(b.CreatedAt) })
	ids := make([]string, 0, min(limit, len(old)))
	for _, r := range old[:min(limit, len(old))] {
		ids = append(ids, r.ID)
	}
	return ids
}

// ListGenerations pages through the records the filter selects, newest first.
func (g *Generations) ListGenerations(_ context.Context, f ports.GenerationFilter) (ports.GenerationPage, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	limit := generation.PageSize(f.Limit)
	eq := func(want string, got string) bool { return want == "" || want == got }
	eqp := func(want string, got *string) bool { return want == "" || (got != nil && *got == want) }
	var sel []generation.Record
	for _, r := range g.records {
		if (!f.From.IsZero() && r.CreatedAt.Before(f.From)) || (!f.To.IsZero() && !r.CreatedAt.Before(f.To)) ||
			(f.After != nil && !f.After.After(&r)) || (f.Status != 0 && r.Status != f.Status) ||
			!eq(f.WorkspaceID, r.WorkspaceID) || !eq(f.KeyHash, r.KeyHash) || !eq(f.Model, r.Model) ||
			!eq(f.ProviderName, r.ProviderName) || !eqp(f.SessionID, r.SessionID) || !eqp(f.UserID, r.UserID) ||
			!eq(f.ExternalUser, r.ExternalUser) {
			continue
		}
		sel = append(sel, r)
	}
	slices.SortFunc(sel, func(a, b generation.Record) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
	})
	var page ports.GenerationPage
	if len(sel) > limit {
		next := generation.CursorOf(&sel[limit-1])
		sel, page.Next = sel[:limit], &next
	}
	for _, r := range sel {
		r.Attempts, r.Flags = slices.Clone(r.Attempts), slices.Clone(r.Flags)
		page.Records = append(page.Records, r)
	}
	return page, nil
}

// Activity sums the aggregate rows the filter selects by the dimensions it keeps apart.
func (g *Generations) Activity(_ context.Context, f ports.ActivityFilter) ([]generation.Activity, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var end time.Time
	if !f.To.IsZero() {
		if end = generation.Day(f.To); f.To.After(end) {
			end = end.AddDate(0, 0, 1)
		}
	}
	eq := func(want, got string) bool { return want == "" || want == got }
	sums := map[generation.ActivityKey]generation.Usage{}
	for k, u := range g.activity {
		if (!f.From.IsZero() && k.Day.Before(generation.Day(f.From))) || (!end.IsZero() && !k.Day.Before(end)) ||
			!eq(f.WorkspaceID, k.WorkspaceID) || !eq(f.KeyHash, k.KeyHash) || !eq(f.UserID, k.UserID) ||
			!eq(f.Model, k.Model) || !eq(f.ProviderName, k.ProviderName) {
			continue
		}
		var kept generation.ActivityKey
		for _, d := range []struct {
			group    ports.ActivityGroup
			from, to *string
		}{{ports.ByWorkspace, &k.WorkspaceID, &kept.WorkspaceID}, {ports.ByKey, &k.KeyHash, &kept.KeyHash},
			{ports.ByUser, &k.UserID, &kept.UserID}, {ports.ByModel, &k.Model, &kept.Model},
			{ports.ByProvider, &k.ProviderName, &kept.ProviderName}, {ports.ByEndpoint, &k.EndpointID, &kept.EndpointID}} {
			if f.GroupBy&d.group != 0 {
				*d.to = *d.from
			}
		}
		if f.GroupBy&ports.ByDay != 0 {
			kept.Day = k.Day
		}
		sums[kept] = sums[kept].Add(u)
	}
	out := make([]generation.Activity, 0, len(sums))
	for k, u := range sums {
		out = append(out, generation.Activity{ActivityKey: k, Usage: u})
	}
	slices.SortFunc(out, func(a, b generation.Activity) int {
		return generation.CompareActivityKeys(a.ActivityKey, b.ActivityKey)
	})
	return out, nil
}
