package gormstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/ports"
)

var _ ports.WorkspaceBudgetStore = (*AccountStore)(nil)

// WorkspaceByRef reads the workspace whose id or slug ref is.
func (s *AccountStore) WorkspaceByRef(ctx context.Context, ref string) (account.Workspace, error) {
	return takeWorkspace(s.db.WithContext(ctx), ref)
}

func takeWorkspace(db *gorm.DB, ref string) (account.Workspace, error) {
	var r workspaceRow
	err := db.Take(&r, "id = ? OR slug = ?", ref, ref).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return account.Workspace{}, account.ErrNoWorkspace
	}
	if err != nil {
		return account.Workspace{}, fmt.Errorf("select workspace: %w", err)
	}
	return r.domain(), nil
}

func (s *AccountStore) UpdateWorkspace(ctx context.Context, id string, change func(*account.Workspace) error) (account.Workspace, error) {
	w, err := update(ctx, s.db, func(tx *gorm.DB) (account.Workspace, error) { return takeWorkspace(tx, id) }, change, toWorkspaceRow)
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return account.Workspace{}, account.ErrWorkspaceExists.Wrap(err)
	}
	return w, err
}

// DeleteWorkspace deletes the workspace with its memberships and budgets, in one transaction that first locks
// the workspace's row: a key, preset or guardrail created in it meanwhile either commits first (and the delete
// is refused) or fails on its reference to the deleted row.
func (s *AccountStore) DeleteWorkspace(ctx context.Context, id string) error {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if _, err := takeWorkspace(tx.Clauses(clause.Locking{Strength: "UPDATE"}), id); err != nil {
			return err
		}
		var used int64
		if err := tx.Raw(`SELECT (SELECT count(*) FROM (SELECT 1 FROM api_keys WHERE workspace_id = ? LIMIT 1) k)
			+ (SELECT count(*) FROM (SELECT 1 FROM presets WHERE workspace_id = ? LIMIT 1) p)
			+ (SELECT count(*) FROM (SELECT 1 FROM guardrails WHERE workspace_id = ? LIMIT 1) g)`, id, id, id).Scan(&used).Error; err != nil {
			return fmt.Errorf("look for the workspace's keys: %w", err)
		}
		if used > 0 {
			return account.ErrWorkspaceInUse
		}
		for _, table := range []string{"workspace_members", "workspace_budgets"} {
			if err := tx.Exec("DELETE FROM "+table+" WHERE workspace_id = ?", id).Error; err != nil {
				return fmt.Errorf("delete %s: %w", table, err)
			}
		}
		if err := tx.Delete(&workspaceRow{}, "id = ?", id).Error; err != nil {
			return fmt.Errorf("delete workspace: %w", err)
		}
		return nil
	})
	if errors.Is(err, gorm.ErrForeignKeyViolated) {
		return account.ErrWorkspaceInUse.Wrap(err)
	}
	return err
}

type workspaceMemberRow struct {
	WorkspaceID string `gorm:"primaryKey"`
	UserID      string `gorm:"primaryKey"`
	Role        string
	CreatedAt   time.Time `gorm:"autoCreateTime:false"`
}

func (workspaceMemberRow) TableName() string { return "workspace_members" }

func (r workspaceMemberRow) domain() account.WorkspaceMembership {
	return account.WorkspaceMembership{WorkspaceID: r.WorkspaceID, UserID: r.UserID, Role: account.WorkspaceRole(r.Role),
		CreatedAt: r.CreatedAt.UTC()}
}

func (s *AccountStore) WorkspaceMembers(ctx context.Context, id string, p ports.Page) ([]account.WorkspaceMembership, int, error) {
	var rows []workspaceMemberRow
	total, err := page(s.db.WithContext(ctx).Where("workspace_id = ?", id).Order("created_at, user_id"), p, &rows)
	if err != nil {
		return nil, 0, fmt.Errorf("list workspace members: %w", err)
	}
	out := make([]account.WorkspaceMembership, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, total, nil
}

// AddWorkspaceMembers adds the memberships that do not exist yet, and returns those it added.
func (s *AccountStore) AddWorkspaceMembers(ctx context.Context, ms []account.WorkspaceMembership) ([]account.WorkspaceMembership, error) {
	var added []account.WorkspaceMembership
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for _, m := range ms {
			r := workspaceMemberRow{WorkspaceID: m.WorkspaceID, UserID: m.UserID, Role: string(m.Role), CreatedAt: m.CreatedAt.UTC()}
			res := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&r)
			if res.Error != nil {
				return fmt.Errorf("insert workspace member: %w", res.Error)
			}
			if res.RowsAffected > 0 {
				added = append(added, m)
			}
		}
		return nil
	})
	if errors.Is(err, gorm.ErrForeignKeyViolated) { // a member or the workspace deleted meanwhile
		return nil, domain.Invalid("user_ids", "names a member that does not exist").Wrap(err)
	}
	return added, err
}

func (s *AccountStore) RemoveWorkspaceMembers(ctx context.Context, id string, userIDs []string) (int, error) {
	res := s.db.WithContext(ctx).Where("workspace_id = ? AND user_id IN ?", id, userIDs).Delete(&workspaceMemberRow{})
	if res.Error != nil {
		return 0, fmt.Errorf("delete workspace members: %w", res.Error)
	}
	return int(res.RowsAffected), nil
}

type workspaceBudgetRow struct {
	ID            string
	WorkspaceID   string `gorm:"primaryKey"`
	ResetInterval string `gorm:"primaryKey"`
	LimitMicros   int64
	IncludeBYOK   bool      `gorm:"column:include_byok"`
	CreatedAt     time.Time `gorm:"autoCreateTime:false"`
	UpdatedAt     time.Time `gorm:"autoUpdateTime:false"`
}

func (workspaceBudgetRow) TableName() string { return "workspace_budgets" }

func (r workspaceBudgetRow) domain() account.Budget {
	return account.Budget{ID: r.ID, WorkspaceID: r.WorkspaceID, Interval: domain.Interval(r.ResetInterval),
		Limit: domain.Micros(r.LimitMicros), IncludeBYOK: r.IncludeBYOK, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
}

// budgetOrder is the order budgets are listed and checked in: the shortest window first.
const budgetOrder = "CASE reset_interval WHEN 'daily' THEN 1 WHEN 'weekly' THEN 2 ELSE 3 END"

func (s *AccountStore) WorkspaceBudgets(ctx context.Context, workspaceID string) ([]account.Budget, error) {
	var rows []workspaceBudgetRow
	if err := s.db.WithContext(ctx).Where("workspace_id = ?", workspaceID).Order(budgetOrder).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("select workspace budgets: %w", err)
	}
	out := make([]account.Budget, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, nil
}

// SetWorkspaceBudget creates the workspace's budget for b's interval, or changes its limit: an existing budget
// keeps its id and creation time.
func (s *AccountStore) SetWorkspaceBudget(ctx context.Context, b account.Budget) (account.Budget, error) {
	r := workspaceBudgetRow{ID: b.ID, WorkspaceID: b.WorkspaceID, ResetInterval: string(b.Interval), LimitMicros: int64(b.Limit),
		IncludeBYOK: b.IncludeBYOK, CreatedAt: b.CreatedAt.UTC(), UpdatedAt: b.UpdatedAt.UTC()}
	var out workspaceBudgetRow
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		err := tx.Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "workspace_id"}, {Name: "reset_interval"}},
			DoUpdates: clause.AssignmentColumns([]string{"limit_micros", "include_byok", "updated_at"}),
		}).Create(&r).Error
		if err != nil {
			return fmt.Errorf("upsert workspace budget: %w", err)
		}
		return tx.Take(&out, "workspace_id = ? AND reset_interval = ?", r.WorkspaceID, r.ResetInterval).Error
	})
	if errors.Is(err, gorm.ErrForeignKeyViolated) {
		return account.Budget{}, account.ErrNoWorkspace.Wrap(err)
	}
	if err != nil {
		return account.Budget{}, err
	}
	return out.domain(), nil
}

func (s *AccountStore) DeleteWorkspaceBudget(ctx context.Context, workspaceID string, i domain.Interval) error {
	res := s.db.WithContext(ctx).Delete(&workspaceBudgetRow{}, "workspace_id = ? AND reset_interval = ?", workspaceID, string(i))
	if res.Error != nil {
		return fmt.Errorf("delete workspace budget: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return account.ErrNoBudget
	}
	return nil
}
