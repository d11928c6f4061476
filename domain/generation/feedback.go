package generation

import (
	"slices"
	"strings"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
)

// FeedbackCategories are what a caller's feedback on a generation may be about (the reference's categories).
var FeedbackCategories = []string{"latency", "incoherence", "incorrect_response", "formatting", "billing", "api_error", "other"}

// maxFeedbackComment bounds a feedback's comment, in characters.
const maxFeedbackComment = 4000

// Feedback is what a caller said about one generation, kept for operators.
type Feedback struct {
	ID, GenerationID, WorkspaceID string
	// KeyHash is the key that sent it: the generation's own, or a management key.
	KeyHash   string
	Category  string
	Comment   *string
	CreatedAt time.Time
}

// NewFeedback validates feedback on the generation rec.
func NewFeedback(id string, rec Record, by, category string, comment *string, now time.Time) (Feedback, error) {
	if !slices.Contains(FeedbackCategories, category) {
		return Feedback{}, domain.Invalid("category", "must be one of "+strings.Join(FeedbackCategories, ", "))
	}
	if comment != nil {
		if err := domain.CheckLength("comment", *comment, maxFeedbackComment); err != nil {
			return Feedback{}, err
		}
	}
	return Feedback{ID: id, GenerationID: rec.ID, WorkspaceID: rec.WorkspaceID, KeyHash: by, Category: category,
		Comment: comment, CreatedAt: now.UTC()}, nil
}
