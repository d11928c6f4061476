package ports

import (
	"context"

	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/preset"
)

// PresetStore keeps presets and their versions. Slugs are unique within a workspace.
type PresetStore interface {
	// AddVersion locks the preset workspace/slug (nil when it does not exist yet), numbers the next version,
	// and stores what build returns, all in one transaction: versions never get gaps or duplicates.
	AddVersion(ctx context.Context, workspaceID, slug string,
		build func(p *preset.Preset, next int) (preset.Preset, preset.Version, error)) (preset.Preset, preset.Version, error)
	// Preset returns the preset and its designated version (nil when none), or preset.ErrNotFound.
	Preset(ctx context.Context, workspaceID, slug string) (preset.Preset, *preset.Version, error)
	// ListPresets lists a workspace's presets, most recently updated first.
	ListPresets(ctx context.Context, workspaceID string, p Page) ([]preset.Preset, int, error)
	// Versions lists a preset's versions in ascending order.
	Versions(ctx context.Context, presetID string, p Page) ([]preset.Version, int, error)
	// Version returns preset.ErrVersionNotFound for an unknown number.
	Version(ctx context.Context, presetID string, number int) (preset.Version, error)
	// UpdatePreset applies change to the locked preset, or returns preset.ErrNotFound.
	UpdatePreset(ctx context.Context, workspaceID, slug string, change func(*preset.Preset) error) (preset.Preset, *preset.Version, error)
}

// PresetScope names where a caller's preset lives: the caller and the workspace it asked for, if any.
type PresetScope struct {
	By          account.Principal
	WorkspaceID string // honoured for management keys; others always use their key's workspace
	Slug        string
}

// PresetVersionChange is a PATCH of a preset: preset.Change with the designated version given by number.
type PresetVersionChange struct {
	preset.Change
	DesignatedVersion *int
}

// PresetBody is an inference request body a preset version is saved from, as its wire format decoded it.
type PresetBody struct {
	Source preset.Source
	Fields map[string]any
	// Check refuses a configuration kept from the body (preset.ConfigFrom) that no call of the source could use,
	// naming its field, as the wire format reads a request's fields; nil checks none.
	Check func(config map[string]any) error
}

// PresetService is the preset use case.
type PresetService interface {
	Get(ctx context.Context, s PresetScope) (preset.Preset, *preset.Version, error)
	List(ctx context.Context, s PresetScope, p Page) ([]preset.Preset, int, error)
	Versions(ctx context.Context, s PresetScope, p Page) ([]preset.Version, int, error)
	Version(ctx context.Context, s PresetScope, number int) (preset.Version, error)
	// CreateVersion creates the preset when the slug is new, else adds a version; the new version is designated.
	CreateVersion(ctx context.Context, s PresetScope, body PresetBody) (preset.Preset, preset.Version, error)
	Update(ctx context.Context, s PresetScope, c PresetVersionChange) (preset.Preset, *preset.Version, error)
}
