package gormstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/domain/guardrail"
	"github.com/switchboard-ai/switchboard/domain/video"
	"github.com/switchboard-ai/switchboard/ports"
)

// VideoStore stores video jobs.
type VideoStore struct{ db *gorm.DB }

var _ ports.VideoStore = (*VideoStore)(nil)

func NewVideoStore(db *gorm.DB) *VideoStore { return &VideoStore{db: db} }

type videoRow struct {
	ID            string `gorm:"primaryKey"`
	WorkspaceID   string
	KeyHash       string
	UserID        *string
	Model         string
	Provider      string
	UpstreamModel string
	UpstreamID    string
	Status        string
	Detail        string
	Error         string
	Seconds       int
	CostMicros    int64
	GenerationID  string
	NextPollAt    time.Time
	ExpiresAt     *time.Time
	CreatedAt     time.Time `gorm:"autoCreateTime:false"`
	UpdatedAt     time.Time `gorm:"autoUpdateTime:false"`
	CompletedAt   *time.Time
}

func (videoRow) TableName() string { return "video_jobs" }

// videoDetail is what a job carries beyond its columns, stored as JSON.
type videoDetail struct {
	Request  videoRequestJSON  `json:"request"`
	Outputs  []videoOutputJSON `json:"outputs"`
	Pricing  pricingJSON       `json:"pricing"`
	Holds    []holdJSON        `json:"holds"`
	Flags    []string          `json:"flags"`
	Attempts []attemptJSON     `json:"attempts"`
	Caller   generation.Caller `json:"caller"`
}

type videoRequestJSON struct {
	Prompt          string            `json:"prompt"`
	Duration        int               `json:"duration,omitempty"`
	Resolution      string            `json:"resolution,omitempty"`
	AspectRatio     string            `json:"aspect_ratio,omitempty"`
	Size            string            `json:"size,omitempty"`
	Seed            *int64            `json:"seed,omitempty"`
	GenerateAudio   *bool             `json:"generate_audio,omitempty"`
	FrameImages     []video.Frame     `json:"frame_images,omitempty"`
	InputReferences []video.Reference `json:"input_references,omitempty"`
	User            string            `json:"user,omitempty"`
	SessionID       string            `json:"session_id,omitempty"`
}

type videoOutputJSON struct {
	Ref         string `json:"ref"`
	ContentType string `json:"content_type"`
}

type pricingJSON struct {
	PerMillionChars *int64 `json:"per_million_chars,omitempty"`
	PerSecond       *int64 `json:"per_second,omitempty"`
}

type holdJSON struct {
	ID          string    `json:"id"`
	GuardrailID string    `json:"guardrail_id"`
	Window      time.Time `json:"window"`
	Amount      int64     `json:"amount"`
}

func toVideoRow(j video.Job) videoRow {
	r := j.Request
	d := videoDetail{
		Request: videoRequestJSON{Prompt: r.Prompt, Duration: r.Duration, Resolution: r.Resolution, AspectRatio: r.AspectRatio,
			Size: r.Size, Seed: r.Seed, GenerateAudio: r.GenerateAudio, FrameImages: r.FrameImages,
			InputReferences: r.InputReferences, User: r.User, SessionID: r.SessionID},
		Pricing:  pricingJSON{PerMillionChars: (*int64)(j.Pricing.PerMillionChars), PerSecond: (*int64)(j.Pricing.PerSecond)},
		Flags:    j.Flags,
		Attempts: toAttempts(j.Attempts, false),
		Caller:   j.Caller,
	}
	for _, o := range j.Outputs {
		d.Outputs = append(d.Outputs, videoOutputJSON(o))
	}
	for _, h := range j.Holds {
		d.Holds = append(d.Holds, holdJSON{ID: h.ID, GuardrailID: h.GuardrailID, Window: h.Window.UTC(), Amount: int64(h.Amount)})
	}
	return videoRow{ID: j.ID, WorkspaceID: j.WorkspaceID, KeyHash: j.KeyHash, UserID: j.UserID, Model: j.Model,
		Provider: j.Provider, UpstreamModel: j.UpstreamModel, UpstreamID: j.UpstreamID, Status: string(j.Status),
		Detail: mustJSON(d), Error: j.Error, Seconds: j.Seconds, CostMicros: int64(j.Cost), GenerationID: j.GenerationID,
		NextPollAt: j.NextPollAt.UTC(), ExpiresAt: utcPtr(j.ExpiresAt), CreatedAt: j.CreatedAt.UTC(),
		UpdatedAt: j.UpdatedAt.UTC(), CompletedAt: utcPtr(j.CompletedAt)}
}

func (r videoRow) domain() (video.Job, error) {
	var d videoDetail
	if err := json.Unmarshal([]byte(r.Detail), &d); err != nil {
		return video.Job{}, fmt.Errorf("video job %s: %w", r.ID, err)
	}
	q := d.Request
	j := video.Job{ID: r.ID, WorkspaceID: r.WorkspaceID, KeyHash: r.KeyHash, UserID: r.UserID, Model: r.Model,
		Provider: r.Provider, UpstreamModel: r.UpstreamModel, UpstreamID: r.UpstreamID, Status: video.Status(r.Status),
		Request: video.Request{Model: r.Model, Prompt: q.Prompt, Duration: q.Duration, Resolution: q.Resolution,
			AspectRatio: q.AspectRatio, Size: q.Size, Seed: q.Seed, GenerateAudio: q.GenerateAudio, FrameImages: q.FrameImages,
			InputReferences: q.InputReferences, User: q.User, SessionID: q.SessionID},
		Pricing: catalog.Pricing{PerMillionChars: (*domain.Micros)(d.Pricing.PerMillionChars), PerSecond: (*domain.Micros)(d.Pricing.PerSecond)},
		Error:   r.Error, Seconds: r.Seconds, Cost: domain.Micros(r.CostMicros), GenerationID: r.GenerationID,
		Flags: d.Flags, Attempts: fromAttempts(d.Attempts), Caller: d.Caller, NextPollAt: r.NextPollAt.UTC(),
		ExpiresAt: utcPtr(r.ExpiresAt), CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(), CompletedAt: utcPtr(r.CompletedAt)}
	for _, o := range d.Outputs {
		j.Outputs = append(j.Outputs, video.Output(o))
	}
	for _, h := range d.Holds {
		j.Holds = append(j.Holds, guardrail.Hold{ID: h.ID, GuardrailID: h.GuardrailID, Window: h.Window.UTC(), Amount: domain.Micros(h.Amount)})
	}
	if j.Attempts == nil {
		j.Attempts = []generation.Attempt{}
	}
	return j, nil
}

func (s *VideoStore) CreateJob(ctx context.Context, j video.Job) error {
	r := toVideoRow(j)
	if err := s.db.WithContext(ctx).Create(&r).Error; err != nil {
		return fmt.Errorf("insert video job: %w", err)
	}
	return nil
}

func (s *VideoStore) Job(ctx context.Context, id string) (video.Job, error) {
	return takeVideo(s.db.WithContext(ctx), id)
}

func takeVideo(db *gorm.DB, id string) (video.Job, error) {
	var r videoRow
	err := db.Take(&r, "id = ?", id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return video.Job{}, video.ErrNotFound
	}
	if err != nil {
		return video.Job{}, fmt.Errorf("select video job: %w", err)
	}
	return r.domain()
}

func (s *VideoStore) UpdateJob(ctx context.Context, id string, change func(*video.Job) error) (video.Job, error) {
	return update(ctx, s.db, func(tx *gorm.DB) (video.Job, error) { return takeVideo(tx, id) }, change, toVideoRow)
}

func (s *VideoStore) ClaimPoll(ctx context.Context, id string, now, next time.Time) (bool, error) {
	res := s.db.WithContext(ctx).Exec(`UPDATE video_jobs SET next_poll_at = ? WHERE id = ? AND next_poll_at <= ?
		AND status IN ('pending', 'in_progress')`, next.UTC(), id, now.UTC())
	if res.Error != nil {
		return false, fmt.Errorf("claim video poll: %w", res.Error)
	}
	return res.RowsAffected == 1, nil
}

func (s *VideoStore) DueJobs(ctx context.Context, now time.Time, limit int) ([]string, error) {
	var ids []string
	err := s.db.WithContext(ctx).Model(&videoRow{}).Where("status IN ('pending', 'in_progress') AND next_poll_at <= ?", now.UTC()).
		Order("next_poll_at").Limit(limit).Pluck("id", &ids).Error
	if err != nil {
		return nil, fmt.Errorf("select video jobs due: %w", err)
	}
	return ids, nil
}

// ListJobs reads a page of jobs, newest first, by the index on created_at (keyset: the page is found by its
// position, not by counting the jobs before it).
func (s *VideoStore) ListJobs(ctx context.Context, f ports.VideoFilter) (ports.VideoPage, error) {
	limit := generation.PageSize(f.Limit)
	where, args, order := newestFirst(s.db, f.After)
	if f.WorkspaceID != "" {
		where, args = append(where, "workspace_id = ?"), append(args, f.WorkspaceID)
	}
	q := s.db.WithContext(ctx).Order(order).Limit(limit + 1)
	if len(where) > 0 {
		q = q.Where(strings.Join(where, " AND "), args...)
	}
	var rows []videoRow
	if err := q.Find(&rows).Error; err != nil {
		return ports.VideoPage{}, fmt.Errorf("list video jobs: %w", err)
	}
	var page ports.VideoPage
	for _, r := range rows[:min(limit, len(rows))] {
		j, err := r.domain()
		if err != nil {
			return ports.VideoPage{}, err
		}
		page.Jobs = append(page.Jobs, j)
	}
	if len(rows) > limit {
		last := page.Jobs[limit-1]
		page.Next = &generation.Cursor{CreatedAt: last.CreatedAt.UTC(), ID: last.ID}
	}
	return page, nil
}
