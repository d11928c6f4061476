package gormstore

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/ports"
)

// CreditStore stores the organization's credit balance.
type CreditStore struct {
	db           *gorm.DB
	reservations batches[hold]
	prepared     prepared
}

var _ ports.CreditStore = (*CreditStore)(nil)

func NewCreditStore(db *gorm.DB) *CreditStore { return &CreditStore{db: db} }

func (s *CreditStore) Credits(ctx context.Context) (domain.Micros, domain.Micros, error) {
	var row struct{ TotalMicros, UsedMicros int64 }
	if err := s.db.WithContext(ctx).Raw("SELECT total_micros, used_micros FROM credit_balance WHERE id = 1").Scan(&row).Error; err != nil {
		return 0, 0, fmt.Errorf("select credits: %w", err)
	}
	return domain.Micros(row.TotalMicros), domain.Micros(row.UsedMicros), nil
}

func (s *CreditStore) AddCredits(ctx context.Context, amount domain.Micros) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec("INSERT INTO credit_grants (id, amount_micros, created_at) VALUES (?, ?, ?)",
			uuid.NewString(), int64(amount), time.Now().UTC()).Error; err != nil {
			return fmt.Errorf("insert credit grant: %w", err)
		}
		return tx.Exec("UPDATE credit_balance SET total_micros = total_micros + ? WHERE id = 1", int64(amount)).Error
	})
}
