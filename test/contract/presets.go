package contract

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/domain/preset"
	"github.com/switchboard-ai/switchboard/ports"
)

// PresetStore checks presets and their versions: numbering, the designated version, large numbers kept
// exactly, lookups scoped to a workspace, pages and updates. newStore also names a workspace that exists.
func PresetStore(t *testing.T, newStore func(t *testing.T) (s ports.PresetStore, workspace string)) {
	ctx := context.Background()
	s, workspace := newStore(t)
	add := func(slug, vid string, at time.Time, config map[string]any) (preset.Preset, preset.Version) {
		t.Helper()
		p, v, err := s.AddVersion(ctx, workspace, slug, func(cur *preset.Preset, next int) (preset.Preset, preset.Version, error) {
			return preset.AddVersion(cur, workspace, slug, next, preset.Draft{Config: config, PresetID: "p-" + slug, VersionID: vid, CreatorID: "c", Now: at})
		})
		if err != nil {
			t.Fatal(err)
		}
		return p, v
	}
	big := json.Number("12345678901234567890")
	p, v1 := add("one", "v1", t0, map[string]any{"model": "m", "n": big})
	_, v2 := add("one", "v2", t0.Add(time.Minute), map[string]any{"model": "m2"})
	add("two", "v3", t0.Add(2*time.Minute), map[string]any{})
	if v1.Number != 1 || v2.Number != 2 {
		t.Fatalf("numbers %d, %d", v1.Number, v2.Number)
	}
	got, designated, err := s.Preset(ctx, workspace, "one")
	if err != nil || got.ID != p.ID || designated == nil || designated.ID != "v2" || !got.UpdatedAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("Preset = %+v, %+v, %v", got, designated, err)
	}
	v, err := s.Version(ctx, p.ID, 1)
	if err != nil || v.Config["n"] != big || v.Config["model"] != "m" || !v.CreatedAt.Equal(t0) {
		t.Fatalf("Version(1) = %+v, %v", v, err)
	}
	if _, err := s.Version(ctx, p.ID, 3); !errors.Is(err, preset.ErrVersionNotFound) {
		t.Fatalf("Version(3) err = %v", err)
	}
	if _, _, err := s.Preset(ctx, workspace, "three"); !errors.Is(err, preset.ErrNotFound) {
		t.Fatalf("Preset(three) err = %v", err)
	}
	if _, _, err := s.Preset(ctx, "other-workspace", "one"); !errors.Is(err, preset.ErrNotFound) {
		t.Fatal("a slug resolved in another workspace")
	}
	list, total, err := s.ListPresets(ctx, workspace, ports.Page{Limit: 10})
	if err != nil || total != 2 || list[0].Slug != "two" || list[1].Slug != "one" {
		t.Fatalf("ListPresets = %+v, %d, %v", list, total, err)
	}
	vs, total, err := s.Versions(ctx, p.ID, ports.Page{Limit: 1, Offset: 1})
	if err != nil || total != 2 || len(vs) != 1 || vs[0].Number != 2 {
		t.Fatalf("Versions page = %+v, %d, %v", vs, total, err)
	}
	updated, designated, err := s.UpdatePreset(ctx, workspace, "one", func(p *preset.Preset) error {
		p.Name, p.DesignatedVersionID = "One", &v1.ID
		return nil
	})
	if err != nil || updated.Name != "One" || designated == nil || designated.ID != "v1" {
		t.Fatalf("UpdatePreset = %+v, %+v, %v", updated, designated, err)
	}
	if _, _, err := s.UpdatePreset(ctx, workspace, "nope", func(*preset.Preset) error { return nil }); !errors.Is(err, preset.ErrNotFound) {
		t.Fatalf("UpdatePreset(nope) err = %v", err)
	}
}
