package gormstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/guardrail"
	"github.com/switchboard-ai/switchboard/ports"
)

// GuardrailStore stores guardrails, their assignments and their budgets.
type GuardrailStore struct {
	db       *gorm.DB
	prepared prepared
}

var (
	_ ports.GuardrailStore  = (*GuardrailStore)(nil)
	_ ports.AssignmentStore = (*GuardrailStore)(nil)
	_ ports.BudgetStore     = (*GuardrailStore)(nil)
)

func NewGuardrailStore(db *gorm.DB) *GuardrailStore { return &GuardrailStore{db: db} }

type guardrailRow struct {
	ID                    string `gorm:"primaryKey"`
	WorkspaceID           string
	Name                  string
	Description           *string
	LimitMicros           *int64
	ResetInterval         string
	AllowedModels         *string
	IgnoredModels         *string
	AllowedProviders      *string
	IgnoredProviders      *string
	AllowedDataRegions    *string
	ContentFilters        *string
	ContentFilterBuiltins *string
	IncludeBYOKInBudgets  bool       `gorm:"column:include_byok_in_budgets"`
	CreatedAt             time.Time  `gorm:"autoCreateTime:false"`
	UpdatedAt             *time.Time `gorm:"autoUpdateTime:false"`
}

func (guardrailRow) TableName() string { return "guardrails" }

type filterJSON struct {
	Pattern string  `json:"pattern"`
	Action  string  `json:"action"`
	Label   *string `json:"label,omitempty"`
}

type builtinJSON struct {
	Slug      string  `json:"slug"`
	Action    string  `json:"action"`
	ScanScope *string `json:"scan_scope,omitempty"`
}

// jsonList stores a list as JSON, keeping "not set" (NULL) apart from "set to empty".
func jsonList[T any](v []T) *string {
	if v == nil {
		return nil
	}
	s := mustJSON(v)
	return &s
}

func parseList[T any](s *string, field string) ([]T, error) {
	if s == nil {
		return nil, nil
	}
	out := []T{}
	if err := json.Unmarshal([]byte(*s), &out); err != nil {
		return nil, fmt.Errorf("guardrail %s: %w", field, err)
	}
	return out, nil
}

func toGuardrailRow(g guardrail.Guardrail) guardrailRow {
	var filters []filterJSON
	if g.ContentFilters != nil {
		filters = make([]filterJSON, len(g.ContentFilters))
		for i, f := range g.ContentFilters {
			filters[i] = filterJSON{Pattern: f.Pattern, Action: string(f.Action), Label: f.Label}
		}
	}
	var builtins []builtinJSON
	if g.Builtins != nil {
		builtins = make([]builtinJSON, len(g.Builtins))
		for i, b := range g.Builtins {
			builtins[i] = builtinJSON{Slug: b.Slug, Action: string(b.Action), ScanScope: b.ScanScope}
		}
	}
	return guardrailRow{ID: g.ID, WorkspaceID: g.WorkspaceID, Name: g.Name, Description: g.Description,
		LimitMicros: (*int64)(g.LimitUSD), ResetInterval: string(g.ResetInterval),
		AllowedModels: jsonList(g.AllowedModels), IgnoredModels: jsonList(g.IgnoredModels),
		AllowedProviders: jsonList(g.AllowedProviders), IgnoredProviders: jsonList(g.IgnoredProviders),
		AllowedDataRegions: jsonList(g.AllowedDataRegions), ContentFilters: jsonList(filters),
		ContentFilterBuiltins: jsonList(builtins), IncludeBYOKInBudgets: g.IncludeBYOKInBudgets,
		CreatedAt: g.CreatedAt.UTC(), UpdatedAt: utcPtr(g.UpdatedAt)}
}

func (r guardrailRow) domain() (guardrail.Guardrail, error) {
	g := guardrail.Guardrail{ID: r.ID, WorkspaceID: r.WorkspaceID, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: utcPtr(r.UpdatedAt),
		Spec: guardrail.Spec{Name: r.Name, Description: r.Description, LimitUSD: (*domain.Micros)(r.LimitMicros),
			ResetInterval: domain.Interval(r.ResetInterval), IncludeBYOKInBudgets: r.IncludeBYOKInBudgets}}
	var err error
	for _, l := range []struct {
		dst   *[]string
		src   *string
		field string
	}{{&g.AllowedModels, r.AllowedModels, "allowed_models"}, {&g.IgnoredModels, r.IgnoredModels, "ignored_models"},
		{&g.AllowedProviders, r.AllowedProviders, "allowed_providers"}, {&g.IgnoredProviders, r.IgnoredProviders, "ignored_providers"},
		{&g.AllowedDataRegions, r.AllowedDataRegions, "allowed_data_regions"}} {
		if *l.dst, err = parseList[string](l.src, l.field); err != nil {
			return guardrail.Guardrail{}, err
		}
	}
	filters, err := parseList[filterJSON](r.ContentFilters, "content_filters")
	if err != nil {
		return guardrail.Guardrail{}, err
	}
	if filters != nil {
		g.ContentFilters = make([]guardrail.ContentFilter, len(filters))
		for i, f := range filters {
			g.ContentFilters[i] = guardrail.ContentFilter{Pattern: f.Pattern, Action: guardrail.Action(f.Action), Label: f.Label}
		}
	}
	builtins, err := parseList[builtinJSON](r.ContentFilterBuiltins, "content_filter_builtins")
	if err != nil {
		return guardrail.Guardrail{}, err
	}
	if builtins != nil {
		g.Builtins = make([]guardrail.Builtin, len(builtins))
		for i, b := range builtins {
			g.Builtins[i] = guardrail.Builtin{Slug: b.Slug, Action: guardrail.Action(b.Action), ScanScope: b.ScanScope}
		}
	}
	return g, nil
}

func guardrailsOf(rows []guardrailRow) ([]guardrail.Guardrail, error) {
	out := make([]guardrail.Guardrail, len(rows))
	for i, r := range rows {
		g, err := r.domain()
		if err != nil {
			return nil, err
		}
		out[i] = g
	}
	return out, nil
}

func (s *GuardrailStore) CreateGuardrail(ctx context.Context, g guardrail.Guardrail) error {
	r := toGuardrailRow(g)
	err := s.db.WithContext(ctx).Create(&r).Error
	if errors.Is(err, gorm.ErrForeignKeyViolated) { // its workspace, deleted since the caller found it
		return account.ErrWorkspaceNotFound.Wrap(err)
	}
	if err != nil {
		return fmt.Errorf("insert guardrail: %w", err)
	}
	return nil
}

func (s *GuardrailStore) Guardrail(ctx context.Context, id string) (guardrail.Guardrail, error) {
	return takeGuardrail(s.db.WithContext(ctx), id)
}

func takeGuardrail(db *gorm.DB, id string) (guardrail.Guardrail, error) {
	var r guardrailRow
	err := db.Take(&r, "id = ?", id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return guardrail.Guardrail{}, guardrail.ErrNotFound
	}
	if err != nil {
		return guardrail.Guardrail{}, fmt.Errorf("select guardrail: %w", err)
	}
	return r.domain()
}

func (s *GuardrailStore) ListGuardrails(ctx context.Context, workspaceID string, p ports.Page) ([]guardrail.Guardrail, int, error) {
	q := s.db.WithContext(ctx).Order("created_at DESC, id")
	if workspaceID != "" {
		q = q.Where("workspace_id = ?", workspaceID)
	}
	var rows []guardrailRow
	total, err := page(q, p, &rows)
	if err != nil {
		return nil, 0, fmt.Errorf("list guardrails: %w", err)
	}
	gs, err := guardrailsOf(rows)
	return gs, total, err
}

func (s *GuardrailStore) UpdateGuardrail(ctx context.Context, id string, change func(*guardrail.Guardrail) error) (guardrail.Guardrail, error) {
	return update(ctx, s.db, func(tx *gorm.DB) (guardrail.Guardrail, error) { return takeGuardrail(tx, id) }, change, toGuardrailRow)
}

func (s *GuardrailStore) DeleteGuardrail(ctx context.Context, id string) error {
	res := s.db.WithContext(ctx).Delete(&guardrailRow{}, "id = ?", id)
	if res.Error != nil {
		return fmt.Errorf("delete guardrail: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return guardrail.ErrNotFound
	}
	return nil
}

func (s *GuardrailStore) Applicable(ctx context.Context, keyHash string, userID *string) ([]guardrail.Guardrail, error) {
	user := ""
	if userID != nil {
		user = *userID
	}
	var rows []guardrailRow
	err := s.db.WithContext(ctx).Where(`id IN (SELECT guardrail_id FROM guardrail_key_assignments WHERE key_hash = ?
		UNION SELECT guardrail_id FROM guardrail_member_assignments WHERE user_id = ?)`, keyHash, user).
		Order("id").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("select applicable guardrails: %w", err)
	}
	return guardrailsOf(rows)
}

// assignment tables share one shape: the holder column differs. field is the request's list of holders, and what
// names a holder that does not exist.
type assignmentTable struct{ table, holder, field, what string }

var (
	memberAssignments = assignmentTable{"guardrail_member_assignments", "user_id", "member_user_ids", "a member"}
	keyAssignments    = assignmentTable{"guardrail_key_assignments", "key_hash", "key_hashes", "a key"}
)

// assign upserts one row per holder: a new holder is inserted, a holder of another guardrail is moved, a holder
// of this one is left alone. The statement's row count is therefore exactly "created or moved". Holders are
// sorted so that concurrent calls take row locks in one order and cannot deadlock.
func (s *GuardrailStore) assign(ctx context.Context, t assignmentTable, guardrailID string, holders []string, by *string, now time.Time) (int, error) {
	var n int64
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if _, err := takeGuardrail(tx.Clauses(clause.Locking{Strength: "SHARE"}), guardrailID); err != nil {
			return err
		}
		values := make([]string, len(holders))
		args := make([]any, 0, len(holders)*5)
		for i, h := range holders {
			values[i] = "(?, ?, ?, ?, ?)"
			args = append(args, uuid.NewString(), h, guardrailID, by, now.UTC())
		}
		res := tx.Exec("INSERT INTO "+t.table+" (id, "+t.holder+", guardrail_id, assigned_by, created_at) VALUES "+
			strings.Join(values, ", ")+" ON CONFLICT ("+t.holder+") DO UPDATE SET guardrail_id = excluded.guardrail_id, "+
			"assigned_by = excluded.assigned_by, created_at = excluded.created_at WHERE "+t.table+".guardrail_id <> excluded.guardrail_id",
			args...)
		if res.Error != nil {
			return fmt.Errorf("assign guardrail: %w", res.Error)
		}
		n = res.RowsAffected
		return nil
	})
	// The guardrail is locked: the reference that failed is a holder's, deleted since the caller checked the
	// holders (a key or a member removed meanwhile), which is the caller's 400, not the store's failure.
	if errors.Is(err, gorm.ErrForeignKeyViolated) {
		return 0, domain.Invalid(t.field, "names "+t.what+" that does not exist (deleted meanwhile)").Wrap(err)
	}
	return int(n), err
}

func (s *GuardrailStore) unassign(ctx context.Context, t assignmentTable, guardrailID string, holders []string) (int, error) {
	if _, err := s.Guardrail(ctx, guardrailID); err != nil {
		return 0, err
	}
	res := s.db.WithContext(ctx).Exec("DELETE FROM "+t.table+" WHERE guardrail_id = ? AND "+t.holder+" IN ?", guardrailID, holders)
	if res.Error != nil {
		return 0, fmt.Errorf("unassign guardrail: %w", res.Error)
	}
	return int(res.RowsAffected), nil
}

func (s *GuardrailStore) AssignMembers(ctx context.Context, guardrailID string, userIDs []string, by *string, now time.Time) (int, error) {
	return s.assign(ctx, memberAssignments, guardrailID, userIDs, by, now)
}

func (s *GuardrailStore) UnassignMembers(ctx context.Context, guardrailID string, userIDs []string) (int, error) {
	return s.unassign(ctx, memberAssignments, guardrailID, userIDs)
}

func (s *GuardrailStore) AssignKeys(ctx context.Context, guardrailID string, keyHashes []string, by *string, now time.Time) (int, error) {
	return s.assign(ctx, keyAssignments, guardrailID, keyHashes, by, now)
}

func (s *GuardrailStore) UnassignKeys(ctx context.Context, guardrailID string, keyHashes []string) (int, error) {
	return s.unassign(ctx, keyAssignments, guardrailID, keyHashes)
}

type assignmentRow struct {
	ID          string
	Holder      string
	GuardrailID string
	AssignedBy  *string
	CreatedAt   time.Time
	KeyName     string
	KeyLabel    string
}

// assignments lists one guardrail's (or all) assignments of a table, newest first; 404 for an unknown guardrail.
func (s *GuardrailStore) assignments(ctx context.Context, t assignmentTable, guardrailID string, p ports.Page) ([]assignmentRow, int, error) {
	if guardrailID != "" {
		if _, err := s.Guardrail(ctx, guardrailID); err != nil {
			return nil, 0, err
		}
	}
	sel := "a.id, a." + t.holder + " AS holder, a.guardrail_id, a.assigned_by, a.created_at"
	q := s.db.WithContext(ctx).Table(t.table + " AS a")
	if t == keyAssignments {
		sel += ", k.name AS key_name, k.label AS key_label"
		q = q.Joins("JOIN api_keys k ON k.hash = a.key_hash")
	}
	q = q.Select(sel).Order("a.created_at DESC, a.id")
	if guardrailID != "" {
		q = q.Where("a.guardrail_id = ?", guardrailID)
	}
	var total int64
	if err := q.Session(&gorm.Session{}).Count(&total).Error; err != nil {
		return nil, 0, fmt.Errorf("count assignments: %w", err)
	}
	var rows []assignmentRow
	if err := q.Limit(p.Limit).Offset(p.Offset).Scan(&rows).Error; err != nil {
		return nil, 0, fmt.Errorf("list assignments: %w", err)
	}
	return rows, int(total), nil
}

func (s *GuardrailStore) MemberAssignments(ctx context.Context, guardrailID string, p ports.Page) ([]ports.MemberAssignment, int, error) {
	rows, total, err := s.assignments(ctx, memberAssignments, guardrailID, p)
	out := make([]ports.MemberAssignment, len(rows))
	for i, r := range rows {
		out[i] = ports.MemberAssignment{ID: r.ID, UserID: r.Holder, GuardrailID: r.GuardrailID, AssignedBy: r.AssignedBy, CreatedAt: r.CreatedAt.UTC()}
	}
	return out, total, err
}

func (s *GuardrailStore) KeyAssignments(ctx context.Context, guardrailID string, p ports.Page) ([]ports.KeyAssignment, int, error) {
	rows, total, err := s.assignments(ctx, keyAssignments, guardrailID, p)
	out := make([]ports.KeyAssignment, len(rows))
	for i, r := range rows {
		out[i] = ports.KeyAssignment{ID: r.ID, KeyHash: r.Holder, KeyName: r.KeyName, KeyLabel: r.KeyLabel,
			GuardrailID: r.GuardrailID, AssignedBy: r.AssignedBy, CreatedAt: r.CreatedAt.UTC()}
	}
	return out, total, err
}

func (s *GuardrailStore) UnknownKeys(ctx context.Context, hashes []string) ([]string, error) {
	var found []string
	if err := s.db.WithContext(ctx).Model(&keyRow{}).Where("hash IN ?", hashes).Pluck("hash", &found).Error; err != nil {
		return nil, fmt.Errorf("select keys: %w", err)
	}
	return missing(hashes, found), nil
}

// missing returns the ids in want that are not in found, in want's order.
func missing(want, found []string) []string {
	known := make(map[string]bool, len(found))
	for _, id := range found {
		known[id] = true
	}
	var out []string
	for _, id := range want {
		if !known[id] {
			out = append(out, id)
		}
	}
	return out
}

func (s *GuardrailStore) Reserve(ctx context.Context, h guardrail.Hold, limit domain.Micros, now, expires time.Time) (ports.Reservation, error) {
	window := h.Window.UTC().Format(dayLayout)
	var res ports.Reservation
	err := transaction(ctx, s.db, &s.prepared, func(tx *txStatements) error {
		if _, err := tx.exec(ctx, `INSERT INTO guardrail_budgets (guardrail_id, window_start, spent_micros) VALUES (?, ?, 0)
			ON CONFLICT (guardrail_id, window_start) DO NOTHING`, h.GuardrailID, window); err != nil {
			return fmt.Errorf("open budget window: %w", err)
		}
		if err := lockBudget(ctx, tx, "guardrail_budgets", "guardrail_id = ? AND window_start = ?", h.GuardrailID, window); err != nil {
			return err
		}
		if _, err := tx.exec(ctx, "DELETE FROM guardrail_holds WHERE guardrail_id = ? AND expires_at <= ?", h.GuardrailID, now.UTC()); err != nil {
			return fmt.Errorf("drop expired holds: %w", err)
		}
		var committed int64
		if err := tx.queryRow(ctx, `SELECT (SELECT spent_micros FROM guardrail_budgets WHERE guardrail_id = ? AND window_start = ?)
			+ (SELECT COALESCE(SUM(amount_micros), 0) FROM guardrail_holds WHERE guardrail_id = ? AND window_start = ?)`,
			h.GuardrailID, window, h.GuardrailID, window).Scan(&committed); err != nil {
			return fmt.Errorf("sum budget and holds: %w", err)
		}
		if !domain.Within(limit, domain.Micros(committed), h.Amount) {
			res.Left = domain.Left(limit, domain.Micros(committed))
			return nil
		}
		if _, err := tx.exec(ctx, "INSERT INTO guardrail_holds (id, guardrail_id, window_start, amount_micros, expires_at) VALUES (?, ?, ?, ?, ?)",
			h.ID, h.GuardrailID, window, int64(h.Amount), expires.UTC()); err != nil {
			return fmt.Errorf("insert hold: %w", err)
		}
		res.Held = true
		return nil
	})
	if err != nil {
		return ports.Reservation{}, err
	}
	return res, nil
}

func (s *GuardrailStore) Settle(ctx context.Context, h guardrail.Hold, actual domain.Micros) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec("DELETE FROM guardrail_holds WHERE id = ?", h.ID).Error; err != nil {
			return fmt.Errorf("release hold: %w", err)
		}
		if actual == 0 {
			return nil
		}
		err := tx.Exec(`INSERT INTO guardrail_budgets (guardrail_id, window_start, spent_micros) VALUES (?, ?, ?)
			ON CONFLICT (guardrail_id, window_start) DO UPDATE SET spent_micros = guardrail_budgets.spent_micros + excluded.spent_micros`,
			h.GuardrailID, h.Window.UTC().Format(dayLayout), int64(actual)).Error
		if err != nil {
			return fmt.Errorf("add spend: %w", err)
		}
		return nil
	})
}

func (s *GuardrailStore) Spent(ctx context.Context, guardrailID string, window time.Time) (domain.Micros, error) {
	var spent int64
	err := s.db.WithContext(ctx).Raw("SELECT COALESCE(SUM(spent_micros), 0) FROM guardrail_budgets WHERE guardrail_id = ? AND window_start = ?",
		guardrailID, window.UTC().Format(dayLayout)).Scan(&spent).Error
	return domain.Micros(spent), err
}
