package gormstore

import (
	"context"
	"fmt"
	"time"

	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/ports"
)

var _ ports.FeedbackStore = (*GenerationStore)(nil)

type feedbackRow struct {
	ID           string
	GenerationID string
	WorkspaceID  string
	KeyHash      string
	Category     string
	Comment      *string
	CreatedAt    time.Time `gorm:"autoCreateTime:false"`
}

func (feedbackRow) TableName() string { return "generation_feedback" }

func (s *GenerationStore) AddFeedback(ctx context.Context, f generation.Feedback) error {
	r := feedbackRow{ID: f.ID, GenerationID: f.GenerationID, WorkspaceID: f.WorkspaceID, KeyHash: f.KeyHash,
		Category: f.Category, Comment: f.Comment, CreatedAt: f.CreatedAt.UTC()}
	if err := s.db.WithContext(ctx).Create(&r).Error; err != nil {
		return fmt.Errorf("insert feedback: %w", err)
	}
	return nil
}
