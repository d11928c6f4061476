package contract

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/domain/guardrail"
	"github.com/switchboard-ai/switchboard/domain/video"
	"github.com/switchboard-ai/switchboard/ports"
)

// fullJob sets every field a video job stores.
func fullJob(id string, status video.Status, nextPoll time.Time) video.Job {
	seed, audio := int64(42), true
	perSecond := domain.Micros(100_000)
	expires := t0.Add(24 * time.Hour)
	return video.Job{ID: id, WorkspaceID: "ws", KeyHash: "kh", UserID: ptr("member"), Model: "acme/video",
		Provider: "openai", UpstreamModel: "sora-2", UpstreamID: "up-" + id, Status: status,
		Pricing: catalog.Pricing{PerSecond: &perSecond},
		Request: video.Request{Model: "acme/video", Prompt: "a cat", Duration: 8, Resolution: "720p", AspectRatio: "16:9",
			Size: "1280x720", Seed: &seed, GenerateAudio: &audio,
			FrameImages:     []video.Frame{{URL: "https://x/first.png", Type: "first_frame"}},
			InputReferences: []video.Reference{{Type: "image_url", URL: "https://x/ref.png"}},
			User:            "end-user", SessionID: "sess"},
		Outputs: []video.Output{{Ref: "files/1", ContentType: "video/mp4"}}, Error: "", Seconds: 8, Cost: 800_000,
		GenerationID: "gen-" + id, Holds: []guardrail.Hold{{ID: "h1", GuardrailID: "g1", Window: t0.Truncate(time.Hour), Amount: 5}},
		Flags:      []string{"email"},
		Attempts:   []generation.Attempt{{ProviderName: "openai", EndpointID: "e", UpstreamModel: "sora-2", Status: 500, Latency: time.Millisecond, Error: "boom"}},
		Caller:     generation.Caller{RequestID: "r", Origin: "o", Referer: "ref", UserAgent: "ua", SessionID: "sess", User: "end-user"},
		NextPollAt: nextPoll, ExpiresAt: &expires, CreatedAt: t0, UpdatedAt: t0.Add(time.Second)}
}

// VideoStore checks video jobs: a full round trip, updates under the row's lock, polls claimed by one poller
// only, and the list of jobs due.
func VideoStore(t *testing.T, newStore func(t *testing.T) ports.VideoStore) {
	ctx := context.Background()
	s := newStore(t)
	create := func(j video.Job) video.Job {
		t.Helper()
		if err := s.CreateJob(ctx, j); err != nil {
			t.Fatalf("CreateJob(%s): %v", j.ID, err)
		}
		return j
	}

	// Round trip: what is stored comes back whole.
	full := create(fullJob("vid-full", video.Completed, t0))
	completed := t0.Add(time.Minute)
	full.CompletedAt = &completed
	if _, err := s.UpdateJob(ctx, full.ID, func(j *video.Job) error { j.CompletedAt = &completed; return nil }); err != nil {
		t.Fatal(err)
	}
	got, err := s.Job(ctx, full.ID)
	if err != nil || !reflect.DeepEqual(got, full) {
		t.Fatalf("round trip (%v)\n got %+v\nwant %+v", err, got, full)
	}
	if _, err := s.Job(ctx, "nope"); !errors.Is(err, video.ErrNotFound) {
		t.Fatalf("Job(nope) err = %v, want ErrNotFound", err)
	}
	if _, err := s.UpdateJob(ctx, "nope", func(*video.Job) error { return nil }); !errors.Is(err, video.ErrNotFound) {
		t.Fatalf("UpdateJob(nope) err = %v, want ErrNotFound", err)
	}

	// A change that fails stores nothing, and its error comes back.
	refused := errors.New("refused")
	if _, err := s.UpdateJob(ctx, full.ID, func(j *video.Job) error { j.Error = "changed"; return refused }); !errors.Is(err, refused) {
		t.Fatalf("UpdateJob with a failing change: err = %v", err)
	}
	if got, _ := s.Job(ctx, full.ID); got.Error != "" {
		t.Fatal("a failed change was stored")
	}

	// Concurrent updates are serialised by the row's lock: none is lost.
	const writers = 8
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.UpdateJob(ctx, full.ID, func(j *video.Job) error { j.Seconds++; return nil }); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if got, _ := s.Job(ctx, full.ID); got.Seconds != full.Seconds+writers {
		t.Fatalf("Seconds = %d after %d concurrent increments from %d", got.Seconds, writers, full.Seconds)
	}

	// Jobs due: running ones whose poll time has come, earliest first, at most limit.
	now := t0.Add(time.Hour)
	create(fullJob("vid-due-2", video.InProgress, now.Add(-time.Minute)))
	create(fullJob("vid-due-1", video.Pending, now.Add(-time.Hour)))
	create(fullJob("vid-due-3", video.InProgress, now))
	create(fullJob("vid-later", video.InProgress, now.Add(time.Second)))
	create(fullJob("vid-failed", video.Failed, now.Add(-time.Hour)))
	due, err := s.DueJobs(ctx, now, 10)
	if want := []string{"vid-due-1", "vid-due-2", "vid-due-3"}; err != nil || !slices.Equal(due, want) {
		t.Fatalf("DueJobs = %v, %v; want %v", due, err, want)
	}
	if due, _ := s.DueJobs(ctx, now, 2); len(due) != 2 {
		t.Fatalf("DueJobs with limit 2 = %v", due)
	}

	// One poller wins a due poll; the next claim at the same time finds it moved.
	next := now.Add(30 * time.Second)
	for _, c := range []struct {
		id   string
		now  time.Time
		want bool
	}{
		{"vid-due-1", now, true},
		{"vid-due-1", now, false},  // already claimed: next poll is in the future
		{"vid-later", now, false},  // not due yet
		{"vid-failed", now, false}, // final: never polled again
		{"nope", now, false},
	} {
		won, err := s.ClaimPoll(ctx, c.id, c.now, next)
		if err != nil || won != c.want {
			t.Fatalf("ClaimPoll(%s) = %v, %v; want %v", c.id, won, err, c.want)
		}
	}
	if j, _ := s.Job(ctx, "vid-due-1"); !j.NextPollAt.Equal(next) {
		t.Fatalf("claimed job's next poll = %v, want %v", j.NextPollAt, next)
	}
	var wins int
	var mu sync.Mutex
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			won, err := s.ClaimPoll(ctx, "vid-due-2", now, next)
			if err != nil {
				t.Error(err)
			}
			if won {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d of %d concurrent pollers won one poll", wins, writers)
	}

	// The list, newest first, ties by id (in bytes), a workspace's only when one is named, a page at a time.
	for i, id := range []string{"vid-ws2-old", "vid-ws2-mid", "vid-ws2-B", "vid-ws2-a"} {
		j := fullJob(id, video.Completed, now)
		j.WorkspaceID, j.CreatedAt = "ws2", t0.Add(time.Duration(min(i, 2)+1)*time.Hour)
		create(j)
	}
	all := []string{"vid-ws2-a", "vid-ws2-B", "vid-ws2-mid", "vid-ws2-old", "vid-later", "vid-full", "vid-failed", "vid-due-3", "vid-due-2", "vid-due-1"}
	var pages [][]string
	for _, tt := range []struct {
		name string
		f    ports.VideoFilter
		want [][]string
	}{
		{"every job", ports.VideoFilter{}, [][]string{all}},
		{"a workspace's, two a page", ports.VideoFilter{WorkspaceID: "ws2", Limit: 2}, [][]string{all[:2], all[2:4]}},
		{"three a page", ports.VideoFilter{Limit: 3}, [][]string{all[:3], all[3:6], all[6:9], all[9:]}},
		{"no such workspace", ports.VideoFilter{WorkspaceID: "nope"}, [][]string{nil}},
	} {
		pages = pages[:0]
		f := tt.f
		for {
			page, err := s.ListJobs(ctx, f)
			if err != nil {
				t.Fatalf("%s: ListJobs: %v", tt.name, err)
			}
			var ids []string
			for _, j := range page.Jobs {
				ids = append(ids, j.ID)
			}
			pages = append(pages, ids)
			if page.Next == nil || len(pages) > len(tt.want) {
				break
			}
			f.After = page.Next
		}
		if !reflect.DeepEqual(pages, tt.want) {
			t.Fatalf("%s: pages %v, want %v", tt.name, pages, tt.want)
		}
	}
	if page, _ := s.ListJobs(ctx, ports.VideoFilter{Limit: 1}); len(page.Jobs) != 1 || !reflect.DeepEqual(page.Jobs[0].Request, fullJob("", "", now).Request) {
		t.Fatalf("a listed job is not whole: %+v", page.Jobs)
	}
}
