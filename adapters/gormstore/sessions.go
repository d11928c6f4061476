package gormstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/ports"
)

// SessionStore keeps the web console's sessions.
type SessionStore struct{ db *gorm.DB }

var _ ports.ConsoleSessionStore = (*SessionStore)(nil)

func NewSessionStore(db *gorm.DB) *SessionStore { return &SessionStore{db: db} }

type sessionRow struct {
	TokenHash string `gorm:"primaryKey"`
	KeyHash   string
	CreatedAt time.Time `gorm:"autoCreateTime:false"`
	ExpiresAt time.Time
}

func (sessionRow) TableName() string { return "console_sessions" }

func (s *SessionStore) CreateSession(ctx context.Context, cs ports.ConsoleSession) error {
	r := sessionRow{TokenHash: cs.TokenHash, KeyHash: cs.KeyHash, CreatedAt: cs.CreatedAt.UTC(), ExpiresAt: cs.ExpiresAt.UTC()}
	if err := s.db.WithContext(ctx).Create(&r).Error; err != nil {
		return fmt.Errorf("insert console session: %w", err)
	}
	return nil
}

func (s *SessionStore) Session(ctx context.Context, tokenHash string) (ports.ConsoleSession, error) {
	var r sessionRow
	err := s.db.WithContext(ctx).Take(&r, "token_hash = ?", tokenHash).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return ports.ConsoleSession{}, account.ErrUnauthenticated
	}
	if err != nil {
		return ports.ConsoleSession{}, fmt.Errorf("select console session: %w", err)
	}
	return ports.ConsoleSession{TokenHash: r.TokenHash, KeyHash: r.KeyHash, CreatedAt: r.CreatedAt.UTC(),
		ExpiresAt: r.ExpiresAt.UTC()}, nil
}

func (s *SessionStore) DeleteSession(ctx context.Context, tokenHash string) error {
	if err := s.db.WithContext(ctx).Delete(&sessionRow{}, "token_hash = ?", tokenHash).Error; err != nil {
		return fmt.Errorf("delete console session: %w", err)
	}
	return nil
}

// DeleteExpiredSessions deletes through a bounded subquery, which both dialects run the same way.
func (s *SessionStore) DeleteExpiredSessions(ctx context.Context, before time.Time, limit int) error {
	err := s.db.WithContext(ctx).Exec(`DELETE FROM console_sessions WHERE token_hash IN
		(SELECT token_hash FROM console_sessions WHERE expires_at < ? LIMIT ?)`, before.UTC(), limit).Error
	if err != nil {
		return fmt.Errorf("delete expired console sessions: %w", err)
	}
	return nil
}
