package gormstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/preset"
	"github.com/switchboard-ai/switchboard/ports"
)

// PresetStore stores presets and their versions.
type PresetStore struct{ db *gorm.DB }

var _ ports.PresetStore = (*PresetStore)(nil)

func NewPresetStore(db *gorm.DB) *PresetStore { return &PresetStore{db: db} }

type presetRow struct {
	ID                  string `gorm:"primaryKey"`
	WorkspaceID         string
	Name                string
	Slug                string
	Description         *string
	Status              string
	StatusUpdatedAt     *time.Time
	CreatorUserID       *string
	DesignatedVersionID *string
	CreatedAt           time.Time `gorm:"autoCreateTime:false"`
	UpdatedAt           time.Time `gorm:"autoUpdateTime:false"`
}

func (presetRow) TableName() string { return "presets" }

func toPresetRow(p preset.Preset) presetRow {
	return presetRow{ID: p.ID, WorkspaceID: p.WorkspaceID, Name: p.Name, Slug: p.Slug, Description: p.Description,
		Status: string(p.Status), StatusUpdatedAt: utcPtr(p.StatusUpdatedAt), CreatorUserID: p.CreatorUserID,
		DesignatedVersionID: p.DesignatedVersionID, CreatedAt: p.CreatedAt.UTC(), UpdatedAt: p.UpdatedAt.UTC()}
}

func (r presetRow) domain() preset.Preset {
	return preset.Preset{ID: r.ID, WorkspaceID: r.WorkspaceID, Name: r.Name, Slug: r.Slug, Description: r.Description,
		Status: preset.Status(r.Status), StatusUpdatedAt: utcPtr(r.StatusUpdatedAt), CreatorUserID: r.CreatorUserID,
		DesignatedVersionID: r.DesignatedVersionID, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
}

type versionRow struct {
	ID           string `gorm:"primaryKey"`
	PresetID     string
	Version      int
	Config       string
	SystemPrompt *string
	CreatorID    string
	CreatedAt    time.Time `gorm:"autoCreateTime:false"`
}

func (versionRow) TableName() string { return "preset_versions" }

func toVersionRow(v preset.Version) (versionRow, error) {
	config, err := json.Marshal(v.Config)
	if err != nil {
		return versionRow{}, fmt.Errorf("encode preset config: %w", err)
	}
	return versionRow{ID: v.ID, PresetID: v.PresetID, Version: v.Number, Config: string(config),
		SystemPrompt: v.SystemPrompt, CreatorID: v.CreatorID, CreatedAt: v.CreatedAt.UTC()}, nil
}

func (r versionRow) domain() (preset.Version, error) {
	config := map[string]any{}
	dec := json.NewDecoder(bytes.NewReader([]byte(r.Config)))
	dec.UseNumber() // numbers come back exactly as they were given
	if err := dec.Decode(&config); err != nil {
		return preset.Version{}, fmt.Errorf("preset version %s config: %w", r.ID, err)
	}
	return preset.Version{ID: r.ID, PresetID: r.PresetID, Number: r.Version, Config: config,
		SystemPrompt: r.SystemPrompt, CreatorID: r.CreatorID, CreatedAt: r.CreatedAt.UTC()}, nil
}

func (s *PresetStore) AddVersion(ctx context.Context, workspaceID, slug string,
	build func(p *preset.Preset, next int) (preset.Preset, preset.Version, error)) (preset.Preset, preset.Version, error) {
	for attempt := 0; ; attempt++ {
		p, v, err := s.addVersion(ctx, workspaceID, slug, build)
		if errors.Is(err, gorm.ErrDuplicatedKey) && attempt < 3 {
			continue // a concurrent call created the same new slug first: now there is a row to lock
		}
		return p, v, err
	}
}

func (s *PresetStore) addVersion(ctx context.Context, workspaceID, slug string,
	build func(p *preset.Preset, next int) (preset.Preset, preset.Version, error)) (preset.Preset, preset.Version, error) {
	var outP preset.Preset
	var outV preset.Version
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		found, err := takePreset(tx.Clauses(clause.Locking{Strength: "UPDATE"}), workspaceID, slug)
		var cur *preset.Preset
		next := 1
		switch {
		case err == nil:
			cur = &found
			if err := tx.Raw("SELECT COALESCE(MAX(version), 0) + 1 FROM preset_versions WHERE preset_id = ?", found.ID).Scan(&next).Error; err != nil {
				return fmt.Errorf("next preset version: %w", err)
			}
		case !errors.Is(err, preset.ErrNotFound):
			return err
		}
		p, v, err := build(cur, next)
		if err != nil {
			return err
		}
		pr := toPresetRow(p)
		if cur == nil {
			err = tx.Create(&pr).Error
		} else {
			err = tx.Save(&pr).Error
		}
		if errors.Is(err, gorm.ErrForeignKeyViolated) { // its workspace, deleted since the caller found it
			return account.ErrWorkspaceNotFound.Wrap(err)
		}
		if err != nil {
			return fmt.Errorf("write preset: %w", err)
		}
		vr, err := toVersionRow(v)
		if err != nil {
			return err
		}
		if err := tx.Create(&vr).Error; err != nil {
			return fmt.Errorf("insert preset version: %w", err)
		}
		outP, outV = p, v
		return nil
	})
	return outP, outV, err
}

func (s *PresetStore) Preset(ctx context.Context, workspaceID, slug string) (preset.Preset, *preset.Version, error) {
	return s.presetWithVersion(s.db.WithContext(ctx), workspaceID, slug)
}

func takePreset(db *gorm.DB, workspaceID, slug string) (preset.Preset, error) {
	var row presetRow
	err := db.Take(&row, "workspace_id = ? AND slug = ?", workspaceID, slug).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return preset.Preset{}, preset.ErrNotFound
	}
	if err != nil {
		return preset.Preset{}, fmt.Errorf("select preset: %w", err)
	}
	return row.domain(), nil
}

func (s *PresetStore) presetWithVersion(db *gorm.DB, workspaceID, slug string) (preset.Preset, *preset.Version, error) {
	p, err := takePreset(db, workspaceID, slug)
	if err != nil || p.DesignatedVersionID == nil {
		return p, nil, err
	}
	var vr versionRow
	if err := db.Take(&vr, "id = ?", *p.DesignatedVersionID).Error; err != nil {
		return preset.Preset{}, nil, fmt.Errorf("select designated version: %w", err)
	}
	v, err := vr.domain()
	if err != nil {
		return preset.Preset{}, nil, err
	}
	return p, &v, nil
}

func (s *PresetStore) ListPresets(ctx context.Context, workspaceID string, p ports.Page) ([]preset.Preset, int, error) {
	var rows []presetRow
	total, err := page(s.db.WithContext(ctx).Where("workspace_id = ?", workspaceID).Order("updated_at DESC, id"), p, &rows)
	if err != nil {
		return nil, 0, fmt.Errorf("list presets: %w", err)
	}
	out := make([]preset.Preset, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, total, nil
}

func (s *PresetStore) Versions(ctx context.Context, presetID string, p ports.Page) ([]preset.Version, int, error) {
	var rows []versionRow
	total, err := page(s.db.WithContext(ctx).Where("preset_id = ?", presetID).Order("version"), p, &rows)
	if err != nil {
		return nil, 0, fmt.Errorf("list preset versions: %w", err)
	}
	out := make([]preset.Version, len(rows))
	for i, r := range rows {
		if out[i], err = r.domain(); err != nil {
			return nil, 0, err
		}
	}
	return out, total, nil
}

func (s *PresetStore) Version(ctx context.Context, presetID string, number int) (preset.Version, error) {
	var r versionRow
	err := s.db.WithContext(ctx).Take(&r, "preset_id = ? AND version = ?", presetID, number).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return preset.Version{}, preset.ErrVersionNotFound
	}
	if err != nil {
		return preset.Version{}, fmt.Errorf("select preset version: %w", err)
	}
	return r.domain()
}

func (s *PresetStore) UpdatePreset(ctx context.Context, workspaceID, slug string, change func(*preset.Preset) error) (preset.Preset, *preset.Version, error) {
	take := func(tx *gorm.DB) (preset.Preset, error) { return takePreset(tx, workspaceID, slug) }
	if _, err := update(ctx, s.db, take, change, toPresetRow); err != nil {
		return preset.Preset{}, nil, err
	}
	return s.Preset(ctx, workspaceID, slug)
}
