// Package memstore holds in-memory implementations of the store ports the inference pipeline uses, for unit
// tests that need no database. They pass the same contract suites as the GORM stores (test/contract).
package memstore

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/domain/video"
	"github.com/switchboard-ai/switchboard/ports"
)

// Credits is the organization's balance; holds are reservations by call id, with their expiry.
type Credits struct {
	mu          sync.Mutex
	total, used domain.Micros
	holds       map[string]hold
}

type hold struct {
	key     string
	amount  domain.Micros
	expires time.Time
}

// held sums the unexpired holds of key ("" for all).
func held(holds map[string]hold, key string, now time.Time) domain.Micros {
	var sum domain.Micros
	for _, h := range holds {
		if (key == "" || h.key == key) && h.expires.After(now) {
			sum += h.amount
		}
	}
	return sum
}

var _ ports.CreditStore = (*Credits)(nil)

func (c *Credits) Credits(context.Context) (domain.Micros, domain.Micros, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total, c.used, nil
}

func (c *Credits) AddCredits(_ context.Context, amount domain.Micros) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total += amount
	return nil
}

func (c *Credits) ReserveCredits(_ context.Context, id string, amount domain.Micros, now, expires time.Time) (ports.Reservation, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !domain.Within(c.total, c.used, held(c.holds, "", now), amount) {
		return ports.Reservation{Left: domain.Left(c.total, c.used, held(c.holds, "", now))}, nil
	}
	if c.holds == nil {
		c.holds = map[string]hold{}
	}
	c.holds[id] = hold{amount: amount, expires: expires}
	return ports.Reservation{Held: true}, nil
}

// Usage is the keys' spend by UTC day, and their holds.
type Usage struct {
	mu    sync.Mutex
	byDay map[string]map[time.Time]domain.Micros
	holds map[string]hold
}

func (u *Usage) ReserveUsage(_ context.Context, id, hash string, since time.Time, limit, amount domain.Micros,
	now, expires time.Time) (ports.Reservation, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	var spent domain.Micros
	for day, m := range u.byDay[hash] {
		if !day.Before(domain.IntervalDaily.Start(since)) {
			spent += m
		}
	}
	if !domain.Within(limit, spent, held(u.holds, hash, now), amount) {
		return ports.Reservation{Left: domain.Left(limit, spent, held(u.holds, hash, now))}, nil
	}
	if u.holds == nil {
		u.holds = map[string]hold{}
	}
	u.holds[id] = hold{key: hash, amount: amount, expires: expires}
	return ports.Reservation{Held: true}, nil
}

var _ ports.UsageStore = (*Usage)(nil)

func (u *Usage) AddUsage(_ context.Context, hash string, at time.Time, amount domain.Micros) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.byDay == nil {
		u.byDay = map[string]map[time.Time]domain.Micros{}
	}
	if u.byDay[hash] == nil {
		u.byDay[hash] = map[time.Time]domain.Micros{}
	}
	u.byDay[hash][domain.IntervalDaily.Start(at)] += amount
	return nil
}

func (u *Usage) Usage(_ context.Context, hashes []string, now time.Time) (map[string]account.Usage, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := map[string]account.Usage{}
	for _, h := range hashes {
		days, ok := u.byDay[h]
		if !ok {
			continue
		}
		var s account.Usage
		for day, m := range days {
			s.Total += m
			if !day.Before(domain.IntervalDaily.Start(now)) {
				s.Daily += m
			}
			if !day.Before(domain.IntervalWeekly.Start(now)) {
				s.Weekly += m
			}
			if !day.Before(domain.IntervalMonthly.Start(now)) {
				s.Monthly += m
			}
		}
		out[h] = s
	}
	return out, nil
}

// Videos keeps video jobs.
type Videos struct {
	mu   sync.Mutex
	jobs map[string]video.Job
}

var _ ports.VideoStore = (*Videos)(nil)

func (s *Videos) CreateJob(_ context.Context, j video.Job) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.jobs == nil {
		s.jobs = map[string]video.Job{}
	}
	s.jobs[j.ID] = clone(j)
	return nil
}

func (s *Videos) Job(_ context.Context, id string) (video.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[id]
	if !ok {
		return video.Job{}, video.ErrNotFound
	}
	return clone(j), nil
}

func (s *Videos) UpdateJob(_ context.Context, id string, change func(*video.Job) error) (video.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[id]
	if !ok {
		return video.Job{}, video.ErrNotFound
	}
	j = clone(j)
	if err := change(&j); err != nil {
		return video.Job{}, err
	}
	s.jobs[id] = clone(j)
	return j, nil
}

func (s *Videos) ClaimPoll(_ context.Context, id string, now, next time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[id]
	if !ok || j.Status.Final() || j.NextPollAt.After(now) {
		return false, nil
	}
	j.NextPollAt = next
	s.jobs[id] = j
	return true, nil
}

func (s *Videos) DueJobs(_ context.Context, now time.Time, limit int) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var due []video.Job
	for _, j := range s.jobs {
		if !j.Status.Final() && !j.NextPollAt.After(now) {
			due = append(due, j)
		}
	}
	slices.SortFunc(due, func(a, b video.Job) int { return cmp.Or(a.NextPollAt.Compare(b.NextPollAt), cmp.Compare(a.ID, b.ID)) })
	ids := make([]string, 0, min(limit, len(due)))
	for _, j := range due[:min(limit, len(due))] {
		ids = append(ids, j.ID)
	}
	return ids, nil
}

// ListJobs pages through the jobs, newest first, as the database's keyset does.
func (s *Videos) ListJobs(_ context.Context, f ports.VideoFilter) (ports.VideoPage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var sel []video.Job
	for _, j := range s.jobs {
		if (f.WorkspaceID == "" || j.WorkspaceID == f.WorkspaceID) && (f.After == nil || f.After.AfterAt(j.CreatedAt, j.ID)) {
			sel = append(sel, clone(j))
		}
	}
	slices.SortFunc(sel, func(a, b video.Job) int { return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID)) })
	var page ports.VideoPage
	if limit := generation.PageSize(f.Limit); len(sel) > limit {
		sel, page.Next = sel[:limit], &generation.Cursor{CreatedAt: sel[limit-1].CreatedAt.UTC(), ID: sel[limit-1].ID}
	}
	page.Jobs = sel
	return page, nil
}

// clone copies what a caller could change through a job's slices, as a database would.
func clone(j video.Job) video.Job {
	j.Outputs, j.Holds, j.Flags, j.Attempts = slices.Clone(j.Outputs), slices.Clone(j.Holds), slices.Clone(j.Flags), slices.Clone(j.Attempts)
	return j
}
