// Package preset is a named, reusable model configuration with immutable versions numbered from 1; the preset
// designates one of them.
package preset

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboard-ai/switchboard/domain"
)

type Status string

const (
	Active   Status = "active"
	Disabled Status = "disabled"
	Archived Status = "archived"
)

type Preset struct {
	ID                  string
	WorkspaceID         string
	Name                string
	Slug                string
	Description         *string
	Status              Status
	StatusUpdatedAt     *time.Time
	CreatorUserID       *string
	DesignatedVersionID *string
	CreatedAt           time.Time
	UpdatedAt           time.Time
}

// Version is immutable once written.
type Version struct {
	ID           string
	PresetID     string
	Number       int
	Config       map[string]any
	SystemPrompt *string
	CreatorID    string
	CreatedAt    time.Time
}

var (
	ErrNotFound        = domain.E(domain.KindNotFound, "preset_not_found", "preset not found")
	ErrVersionNotFound = domain.E(domain.KindNotFound, "preset_version_not_found", "preset version not found")
	ErrArchived        = domain.E(domain.KindConflict, "preset_archived", "the preset is archived; unarchive it before adding versions")
)

// Draft is a new version to add: the configuration taken from a request, and who made it.
type Draft struct {
	Config        map[string]any
	SystemPrompt  *string
	CreatorUserID *string
	CreatorID     string
	PresetID      string // used when the preset is new
	VersionID     string
	Now           time.Time
}

// AddVersion appends the draft to p as version next and designates it. A nil p means the preset is new: it is
// created, named after its slug. Archived presets take no new versions.
func AddVersion(p *Preset, workspaceID, slug string, next int, d Draft) (Preset, Version, error) {
	now := d.Now.UTC()
	var out Preset
	if p == nil {
		if err := domain.ValidateSlug("slug", slug); err != nil {
			return Preset{}, Version{}, err
		}
		out = Preset{ID: d.PresetID, WorkspaceID: workspaceID, Name: slug, Slug: slug, Status: Active,
			CreatorUserID: d.CreatorUserID, CreatedAt: now}
	} else {
		if p.Status == Archived {
			return Preset{}, Version{}, ErrArchived
		}
		out = *p
	}
	v := Version{ID: d.VersionID, PresetID: out.ID, Number: next, Config: d.Config, SystemPrompt: d.SystemPrompt,
		CreatorID: d.CreatorID, CreatedAt: now}
	out.DesignatedVersionID = &v.ID
	out.UpdatedAt = now
	return out, v, nil
}

// Change is a partial update of a preset. DesignatedVersionID is resolved from a version number by the caller.
type Change struct {
	Name                *string
	Description         domain.Patch[string]
	Status              *Status
	DesignatedVersionID *string
}

// Apply validates the change and writes it into p.
func (c Change) Apply(p *Preset, now time.Time) error {
	now = now.UTC()
	if c.Name != nil {
		name := strings.TrimSpace(*c.Name)
		if name == "" || utf8.RuneCountInString(name) > 200 {
			return domain.Invalid("name", "must be 1 to 200 characters")
		}
		p.Name = name
	}
	if c.Description.Value != nil && utf8.RuneCountInString(*c.Description.Value) > 2000 {
		return domain.Invalid("description", "must be at most 2000 characters")
	}
	c.Description.Apply(&p.Description)
	if c.Status != nil {
		switch *c.Status {
		case Active, Disabled, Archived:
		default:
			return domain.Invalid("status", "must be active, disabled or archived")
		}
		if *c.Status != p.Status {
			p.Status = *c.Status
			p.StatusUpdatedAt = &now
		}
	}
	if c.DesignatedVersionID != nil {
		p.DesignatedVersionID = c.DesignatedVersionID
	}
	p.UpdatedAt = now
	return nil
}
