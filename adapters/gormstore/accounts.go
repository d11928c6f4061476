package gormstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/ports"
)

// AccountStore stores the organization, workspaces, members, keys and key usage.
type AccountStore struct {
	db           *gorm.DB
	reservations batches[hold]
	prepared     prepared
}

var (
	_ ports.Directory   = (*AccountStore)(nil)
	_ ports.KeyStore    = (*AccountStore)(nil)
	_ ports.UsageStore  = (*AccountStore)(nil)
	_ ports.MemberStore = (*AccountStore)(nil)
)

func NewAccountStore(db *gorm.DB) *AccountStore { return &AccountStore{db: db} }

type organizationRow struct {
	ID        string
	Name      string
	CreatedAt time.Time `gorm:"autoCreateTime:false"`
}

func (organizationRow) TableName() string { return "organizations" }

type workspaceRow struct {
	ID          string `gorm:"primaryKey"`
	Name        string
	Slug        string
	Description *string
	CreatedAt   time.Time  `gorm:"autoCreateTime:false"`
	UpdatedAt   *time.Time `gorm:"autoUpdateTime:false"`
}

func (workspaceRow) TableName() string { return "workspaces" }

func (r workspaceRow) domain() account.Workspace {
	return account.Workspace{ID: r.ID, Name: r.Name, Slug: r.Slug, Description: r.Description, CreatedAt: r.CreatedAt.UTC(),
		UpdatedAt: utcPtr(r.UpdatedAt)}
}

func toWorkspaceRow(w account.Workspace) workspaceRow {
	return workspaceRow{ID: w.ID, Name: w.Name, Slug: w.Slug, Description: w.Description, CreatedAt: w.CreatedAt.UTC(),
		UpdatedAt: utcPtr(w.UpdatedAt)}
}

func (s *AccountStore) Organization(ctx context.Context) (account.Organization, error) {
	var r organizationRow
	if err := s.db.WithContext(ctx).Take(&r).Error; err != nil {
		return account.Organization{}, fmt.Errorf("select organization: %w", err)
	}
	return account.Organization{ID: r.ID, Name: r.Name}, nil
}

func (s *AccountStore) DefaultWorkspace(ctx context.Context) (account.Workspace, error) {
	var r workspaceRow
	if err := s.db.WithContext(ctx).Take(&r, "slug = ?", account.DefaultWorkspaceSlug).Error; err != nil {
		return account.Workspace{}, fmt.Errorf("select default workspace: %w", err)
	}
	return r.domain(), nil
}

func (s *AccountStore) Workspace(ctx context.Context, id string) (account.Workspace, error) {
	var r workspaceRow
	err := s.db.WithContext(ctx).Take(&r, "id = ?", id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return account.Workspace{}, account.ErrWorkspaceNotFound
	}
	if err != nil {
		return account.Workspace{}, fmt.Errorf("select workspace: %w", err)
	}
	return r.domain(), nil
}

func (s *AccountStore) CreateWorkspace(ctx context.Context, ws account.Workspace) error {
	r := toWorkspaceRow(ws)
	err := s.db.WithContext(ctx).Create(&r).Error
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return account.ErrWorkspaceExists.Wrap(err)
	}
	if err != nil {
		return fmt.Errorf("insert workspace: %w", err)
	}
	return nil
}

func (s *AccountStore) ListWorkspaces(ctx context.Context, p ports.Page) ([]account.Workspace, int, error) {
	var rows []workspaceRow
	total, err := page(s.db.WithContext(ctx).Order("created_at, id"), p, &rows)
	if err != nil {
		return nil, 0, fmt.Errorf("list workspaces: %w", err)
	}
	out := make([]account.Workspace, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, total, nil
}

// page counts what q selects and loads the page p of it into dst.
func page[T any](q *gorm.DB, p ports.Page, dst *[]T) (int, error) {
	q = q.Session(&gorm.Session{}) // each use below starts from q, not from the other's changes
	var total int64
	if err := q.Model(new(T)).Count(&total).Error; err != nil {
		return 0, err
	}
	if err := q.Limit(p.Limit).Offset(p.Offset).Find(dst).Error; err != nil {
		return 0, err
	}
	return int(total), nil
}

type keyRow struct {
	Hash               string `gorm:"primaryKey"`
	Name               string
	Label              string
	Management         bool
	Disabled           bool
	LimitMicros        *int64
	LimitReset         string
	IncludeBYOKInLimit bool `gorm:"column:include_byok_in_limit"`
	ExpiresAt          *time.Time
	WorkspaceID        string
	CreatorUserID      *string
	ExternalUser       *string
	RequestsPerMinute  int
	TokensPerMinute    int64
	TokensPerDay       int64
	CreatedAt          time.Time  `gorm:"autoCreateTime:false"`
	UpdatedAt          *time.Time `gorm:"autoUpdateTime:false"`
}

func (keyRow) TableName() string { return "api_keys" }

func toKeyRow(k account.Key) keyRow {
	return keyRow{
		Hash: k.Hash, Name: k.Name, Label: k.Label, Management: k.Management, Disabled: k.Disabled,
		LimitMicros: (*int64)(k.Limit), LimitReset: string(k.LimitReset), IncludeBYOKInLimit: k.IncludeBYOKInLimit,
		ExpiresAt: utcPtr(k.ExpiresAt), WorkspaceID: k.WorkspaceID, CreatorUserID: k.CreatorUserID,
		ExternalUser: k.ExternalUser, RequestsPerMinute: k.RequestsPerMinute, TokensPerMinute: k.Tokens.PerMinute,
		TokensPerDay: k.Tokens.PerDay, CreatedAt: k.CreatedAt.UTC(), UpdatedAt: utcPtr(k.UpdatedAt),
	}
}

func (r keyRow) domain() account.Key {
	return account.Key{
		Hash: r.Hash, Name: r.Name, Label: r.Label, Management: r.Management, Disabled: r.Disabled,
		Limit: (*domain.Micros)(r.LimitMicros), LimitReset: domain.Interval(r.LimitReset),
		IncludeBYOKInLimit: r.IncludeBYOKInLimit, ExpiresAt: utcPtr(r.ExpiresAt), WorkspaceID: r.WorkspaceID,
		CreatorUserID: r.CreatorUserID, ExternalUser: r.ExternalUser, RequestsPerMinute: r.RequestsPerMinute,
		Tokens:    account.TokenLimits{PerMinute: r.TokensPerMinute, PerDay: r.TokensPerDay},
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: utcPtr(r.UpdatedAt),
	}
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func (s *AccountStore) CreateKey(ctx context.Context, k account.Key) error {
	r := toKeyRow(k)
	err := s.db.WithContext(ctx).Create(&r).Error
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return account.ErrKeyExists.Wrap(err)
	}
	if err != nil {
		return fmt.Errorf("insert key: %w", err)
	}
	return nil
}

func (s *AccountStore) Key(ctx context.Context, hash string) (account.Key, error) {
	return takeKey(s.db.WithContext(ctx), hash)
}

func takeKey(db *gorm.DB, hash string) (account.Key, error) {
	var r keyRow
	err := db.Take(&r, "hash = ?", hash).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return account.Key{}, account.ErrKeyNotFound
	}
	if err != nil {
		return account.Key{}, fmt.Errorf("select key: %w", err)
	}
	return r.domain(), nil
}

func (s *AccountStore) ListKeys(ctx context.Context, f ports.KeyFilter) ([]account.Key, error) {
	q := s.db.WithContext(ctx).Order("created_at DESC, hash")
	if f.WorkspaceID != "" {
		q = q.Where("workspace_id = ?", f.WorkspaceID)
	}
	if !f.IncludeDisabled {
		q = q.Where("disabled = ?", false)
	}
	if f.Offset > 0 {
		q = q.Offset(f.Offset)
	}
	var rows []keyRow
	if err := q.Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	keys := make([]account.Key, len(rows))
	for i, r := range rows {
		keys[i] = r.domain()
	}
	return keys, nil
}

func (s *AccountStore) UpdateKey(ctx context.Context, hash string, change func(*account.Key) error) (account.Key, error) {
	return update(ctx, s.db, func(tx *gorm.DB) (account.Key, error) { return takeKey(tx, hash) }, change, toKeyRow)
}

func (s *AccountStore) DeleteKey(ctx context.Context, hash string) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Delete(&keyRow{}, "hash = ?", hash)
		if res.Error != nil {
			return fmt.Errorf("delete key: %w", res.Error)
		}
		if res.RowsAffected == 0 {
			return account.ErrKeyNotFound
		}
		return tx.Exec("DELETE FROM key_usage WHERE key_hash = ?", hash).Error
	})
}

func (s *AccountStore) HasManagementKey(ctx context.Context) (bool, error) {
	var n int64
	if err := s.db.WithContext(ctx).Model(&keyRow{}).Where("management = ?", true).Limit(1).Count(&n).Error; err != nil {
		return false, fmt.Errorf("count management keys: %w", err)
	}
	return n > 0, nil
}

const dayLayout = "2006-01-02"

func (s *AccountStore) Usage(ctx context.Context, hashes []string, now time.Time) (map[string]account.Usage, error) {
	out := make(map[string]account.Usage, len(hashes))
	if len(hashes) == 0 {
		return out, nil
	}
	var rows []struct {
		KeyHash                       string
		Total, Daily, Weekly, Monthly int64
	}
	day := func(i domain.Interval) string { return i.Start(now).Format(dayLayout) }
	err := s.db.WithContext(ctx).Raw(`SELECT key_hash,
		SUM(micros) AS total,
		SUM(CASE WHEN day >= ? THEN micros ELSE 0 END) AS daily,
		SUM(CASE WHEN day >= ? THEN micros ELSE 0 END) AS weekly,
		SUM(CASE WHEN day >= ? THEN micros ELSE 0 END) AS monthly
		FROM key_usage WHERE key_hash IN ? GROUP BY key_hash`,
		day(domain.IntervalDaily), day(domain.IntervalWeekly), day(domain.IntervalMonthly), hashes).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("select key usage: %w", err)
	}
	for _, r := range rows {
		out[r.KeyHash] = account.Usage{Total: domain.Micros(r.Total), Daily: domain.Micros(r.Daily),
			Weekly: domain.Micros(r.Weekly), Monthly: domain.Micros(r.Monthly)}
	}
	return out, nil
}

func (s *AccountStore) AddUsage(ctx context.Context, hash string, at time.Time, amount domain.Micros) error {
	if amount == 0 {
		return nil
	}
	err := s.db.WithContext(ctx).Exec(`INSERT INTO key_usage (key_hash, day, micros) VALUES (?, ?, ?)
		ON CONFLICT (key_hash, day) DO UPDATE SET micros = key_usage.micros + excluded.micros`,
		hash, at.UTC().Format(dayLayout), int64(amount)).Error
	if err != nil {
		return fmt.Errorf("add key usage: %w", err)
	}
	return nil
}

type memberRow struct {
	ID        string
	Email     string
	FirstName *string
	LastName  *string
	Role      string
	CreatedAt time.Time `gorm:"autoCreateTime:false"`
}

func (memberRow) TableName() string { return "members" }

func (s *AccountStore) CreateMember(ctx context.Context, m account.Member) error {
	r := memberRow{ID: m.ID, Email: m.Email, FirstName: m.FirstName, LastName: m.LastName, Role: string(m.Role), CreatedAt: m.CreatedAt.UTC()}
	err := s.db.WithContext(ctx).Create(&r).Error
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return account.ErrMemberExists.Wrap(err)
	}
	if err != nil {
		return fmt.Errorf("insert member: %w", err)
	}
	return nil
}

func (s *AccountStore) ListMembers(ctx context.Context, p ports.Page) ([]account.Member, int, error) {
	var rows []memberRow
	total, err := page(s.db.WithContext(ctx).Order("created_at, id"), p, &rows)
	if err != nil {
		return nil, 0, fmt.Errorf("list members: %w", err)
	}
	out := make([]account.Member, len(rows))
	for i, r := range rows {
		out[i] = account.Member{ID: r.ID, Email: r.Email, FirstName: r.FirstName, LastName: r.LastName,
			Role: account.Role(r.Role), CreatedAt: r.CreatedAt.UTC()}
	}
	return out, total, nil
}

func (s *AccountStore) UnknownMembers(ctx context.Context, ids []string) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var found []string
	if err := s.db.WithContext(ctx).Model(&memberRow{}).Where("id IN ?", ids).Pluck("id", &found).Error; err != nil {
		return nil, fmt.Errorf("select members: %w", err)
	}
	return missing(ids, found), nil
}
