package app

import (
	"context"
	"errors"
	"math"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/preset"
	"github.com/switchboard-ai/switchboard/ports"
)

// Presets implements the preset use case. Any key of a workspace reads and writes its presets; a management key
// works in the default workspace unless the request names another.
type Presets struct {
	store ports.PresetStore
	dir   ports.Directory
	env   Env
}

var _ ports.PresetService = (*Presets)(nil)

func NewPresets(store ports.PresetStore, dir ports.Directory, env Env) *Presets {
	return &Presets{store: store, dir: dir, env: env}
}

// workspace resolves where the scope's presets live: a key's own workspace, which it may name (another is a 400,
// as it is to the generations); for a management key the one it names, or the default.
func (p *Presets) workspace(ctx context.Context, s ports.PresetScope) (string, error) {
	if !s.By.Management {
		return scopeWorkspace(ctx, p.dir, s.By, s.WorkspaceID)
	}
	if s.WorkspaceID == "" {
		ws, err := p.dir.DefaultWorkspace(ctx)
		return ws.ID, err
	}
	ws, err := p.dir.Workspace(ctx, s.WorkspaceID)
	return ws.ID, err
}

// slugOf validates the scope's slug: a malformed one is a 400, a well-formed unknown one a 404.
func slugOf(s ports.PresetScope) error { return domain.ValidateSlug("slug", s.Slug) }

func (p *Presets) Get(ctx context.Context, s ports.PresetScope) (preset.Preset, *preset.Version, error) {
	if err := slugOf(s); err != nil {
		return preset.Preset{}, nil, err
	}
	ws, err := p.workspace(ctx, s)
	if err != nil {
		return preset.Preset{}, nil, err
	}
	return p.store.Preset(ctx, ws, s.Slug)
}

func (p *Presets) List(ctx context.Context, s ports.PresetScope, page ports.Page) ([]preset.Preset, int, error) {
	ws, err := p.workspace(ctx, s)
	if err != nil {
		return nil, 0, err
	}
	return p.store.ListPresets(ctx, ws, page)
}

func (p *Presets) Versions(ctx context.Context, s ports.PresetScope, page ports.Page) ([]preset.Version, int, error) {
	pr, _, err := p.Get(ctx, s)
	if err != nil {
		return nil, 0, err
	}
	return p.store.Versions(ctx, pr.ID, page)
}

func (p *Presets) Version(ctx context.Context, s ports.PresetScope, number int) (preset.Version, error) {
	pr, _, err := p.Get(ctx, s)
	if err != nil {
		return preset.Version{}, err
	}
	return p.version(ctx, pr.ID, number)
}

// version is the preset's version numbered n: a number no version column can hold (past PostgreSQL's integer)
// names no version.
func (p *Presets) version(ctx context.Context, presetID string, n int) (preset.Version, error) {
	if n < 1 || n > math.MaxInt32 {
		return preset.Version{}, preset.ErrVersionNotFound
	}
	return p.store.Version(ctx, presetID, n)
}

// CreateVersion keeps the body's configuration, refused when no call could use it (a check of the body's wire
// format, when it has one) rather than at every call made with it.
func (p *Presets) CreateVersion(ctx context.Context, s ports.PresetScope, body ports.PresetBody) (preset.Preset, preset.Version, error) {
	if err := slugOf(s); err != nil {
		return preset.Preset{}, preset.Version{}, err
	}
	config, system, err := preset.ConfigFrom(body.Source, body.Fields)
	if err != nil {
		return preset.Preset{}, preset.Version{}, err
	}
	if body.Check != nil {
		if err := body.Check(config); err != nil {
			return preset.Preset{}, preset.Version{}, err
		}
	}
	ws, err := p.workspace(ctx, s)
	if err != nil {
		return preset.Preset{}, preset.Version{}, err
	}
	d := preset.Draft{Config: config, SystemPrompt: system, CreatorUserID: s.By.CreatorUserID,
		CreatorID: creatorID(s.By), PresetID: p.env.NewID(), VersionID: p.env.NewID(), Now: p.env.Now()}
	return p.store.AddVersion(ctx, ws, s.Slug, func(pr *preset.Preset, next int) (preset.Preset, preset.Version, error) {
		return preset.AddVersion(pr, ws, s.Slug, next, d)
	})
}

// creatorID names who made a version: the member owning the key, or else the key itself.
func creatorID(p account.Principal) string {
	if p.CreatorUserID != nil {
		return *p.CreatorUserID
	}
	return "key:" + p.KeyHash
}

func (p *Presets) Update(ctx context.Context, s ports.PresetScope, c ports.PresetVersionChange) (preset.Preset, *preset.Version, error) {
	pr, _, err := p.Get(ctx, s)
	if err != nil {
		return preset.Preset{}, nil, err
	}
	if c.DesignatedVersion != nil { // versions never change or go away, so resolving outside the update is safe
		v, err := p.version(ctx, pr.ID, *c.DesignatedVersion)
		if errors.Is(err, preset.ErrVersionNotFound) {
			return preset.Preset{}, nil, domain.Invalid("designated_version", "no such version of this preset")
		}
		if err != nil {
			return preset.Preset{}, nil, err
		}
		c.DesignatedVersionID = &v.ID
	}
	now := p.env.Now()
	return p.store.UpdatePreset(ctx, pr.WorkspaceID, pr.Slug, func(pr *preset.Preset) error { return c.Apply(pr, now) })
}
