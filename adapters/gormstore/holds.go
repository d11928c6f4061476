package gormstore

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/switchboard-ai/switchboard/domain"
)

// lockRow takes the row lock that serialises reservations on one budget (PostgreSQL; SQLite serialises writers).
// What the reservation then reads must be one statement: under READ COMMITTED each statement sees the commits made
// before it, and a call booked between two statements would move from the holds to the spend unseen.
func lockRow(tx *gorm.DB, table, where string, args ...any) error {
	if Dialect(tx) != Postgres {
		return nil
	}
	if err := tx.Exec("SELECT 1 FROM "+table+" WHERE "+where+" FOR UPDATE", args...).Error; err != nil {
		return fmt.Errorf("lock %s: %w", table, err)
	}
	return nil
}

// ReserveUsage holds amount against the key's limit when its usage on days from since, the holds in flight and
// amount stay within limit; false when they would not.
func (s *AccountStore) ReserveUsage(ctx context.Context, id, hash string, since time.Time, limit, amount domain.Micros,
	now, expires time.Time) (bool, error) {
	ok := false
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := lockRow(tx, "api_keys", "hash = ?", hash); err != nil {
			return err
		}
		// One statement, so one snapshot: a call booked meanwhile moves from the holds to the usage atomically.
		var committed int64
		if err := tx.Raw(`SELECT (SELECT COALESCE(SUM(micros), 0) FROM key_usage WHERE key_hash = ? AND day >= ?)
			+ (SELECT COALESCE(SUM(amount_micros), 0) FROM key_holds WHERE key_hash = ? AND expires_at > ?)`,
			hash, since.UTC().Format(dayLayout), hash, now.UTC()).Scan(&committed).Error; err != nil {
			return fmt.Errorf("sum key usage and holds: %w", err)
		}
		if domain.Micros(committed)+amount > limit {
			return nil
		}
		if err := tx.Exec("DELETE FROM key_holds WHERE key_hash = ? AND expires_at <= ?", hash, now.UTC()).Error; err != nil {
			return fmt.Errorf("drop expired key holds: %w", err)
		}
		if err := tx.Exec("INSERT INTO key_holds (id, key_hash, amount_micros, expires_at) VALUES (?, ?, ?, ?)",
			id, hash, int64(amount), expires.UTC()).Error; err != nil {
			return fmt.Errorf("insert key hold: %w", err)
		}
		ok = true
		return nil
	})
	return ok, err
}

// ReserveCredits holds amount against the organization's credits when what was used, the holds in flight and
// amount stay within what was added; false when they would not.
func (s *CreditStore) ReserveCredits(ctx context.Context, id string, amount domain.Micros, now, expires time.Time) (bool, error) {
	ok := false
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := lockRow(tx, "credit_balance", "id = 1"); err != nil {
			return err
		}
		var row struct{ TotalMicros, Committed int64 } // one statement, one snapshot, as for keys
		if err := tx.Raw(`SELECT total_micros, used_micros + (SELECT COALESCE(SUM(amount_micros), 0) FROM credit_holds
			WHERE expires_at > ?) AS committed FROM credit_balance WHERE id = 1`, now.UTC()).Scan(&row).Error; err != nil {
			return fmt.Errorf("select credits and holds: %w", err)
		}
		if domain.Micros(row.Committed)+amount > domain.Micros(row.TotalMicros) {
			return nil
		}
		if err := tx.Exec("DELETE FROM credit_holds WHERE expires_at <= ?", now.UTC()).Error; err != nil {
			return fmt.Errorf("drop expired credit holds: %w", err)
		}
		if err := tx.Exec("INSERT INTO credit_holds (id, amount_micros, expires_at) VALUES (?, ?, ?)",
			id, int64(amount), expires.UTC()).Error; err != nil {
			return fmt.Errorf("insert credit hold: %w", err)
		}
		ok = true
		return nil
	})
	return ok, err
}
