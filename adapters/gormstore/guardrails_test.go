package gormstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/guardrail"
	"github.com/switchboard-ai/switchboard/domain/preset"
)

// TestAssignVanishedHolder: a key or member that does not exist when a guardrail is assigned to it (deleted after
// the caller checked the ids, before the assignment) is the caller's 400 naming the list, not the store's failure
// (a foreign key's violation); the holders that exist are assigned, on both databases.
func TestAssignVanishedHolder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	const hash = "1111111111111111111111111111111111111111111111111111111111111111"
	onEachDialect(t, func(t *testing.T, db *gorm.DB) {
		accounts, s := NewAccountStore(db), NewGuardrailStore(db)
		ws, err := accounts.DefaultWorkspace(ctx)
		if err != nil {
			t.Fatal(err)
		}
		g, err := guardrail.New("00000000-0000-0000-0000-0000000000a1", ws.ID, guardrail.Spec{Name: "g"}, now)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.CreateGuardrail(ctx, g); err != nil {
			t.Fatal(err)
		}
		if err := accounts.CreateKey(ctx, account.Key{Hash: hash, Name: "k", Label: "sk-...1", WorkspaceID: ws.ID, CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		if err := accounts.CreateMember(ctx, account.Member{ID: "user_1", Email: "a@example.com", Role: account.RoleMember, CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		keys := func(ids []string) (int, error) { return s.AssignKeys(ctx, g.ID, ids, nil, now) }
		members := func(ids []string) (int, error) { return s.AssignMembers(ctx, g.ID, ids, nil, now) }
		for _, tt := range []struct {
			name    string
			assign  func(ids []string) (int, error)
			ids     []string
			field   string // the 400's field; "" for none
			created int
		}{
			{"a key that exists", keys, []string{hash}, "", 1},
			{"a key deleted meanwhile", keys, []string{"2222222222222222222222222222222222222222222222222222222222222222"}, "key_hashes", 0},
			{"a member that exists", members, []string{"user_1"}, "", 1},
			{"a member deleted meanwhile", members, []string{"user_gone"}, "member_user_ids", 0},
		} {
			n, err := tt.assign(tt.ids)
			if tt.field == "" {
				if err != nil || n != tt.created {
					t.Errorf("%s: assigned %d, %v; want %d", tt.name, n, err, tt.created)
				}
				continue
			}
			var de *domain.Error
			if !errors.As(err, &de) || de.Kind != domain.KindInvalid || de.Meta["field"] != tt.field {
				t.Errorf("%s: assigned %d, %v; want a 400 naming %s", tt.name, n, err, tt.field)
			}
		}
	})
}

// TestCreateInVanishedWorkspace: a guardrail or a preset created in a workspace that no longer exists (deleted
// after the caller found it, before the insert) is the caller's 400 naming workspace_id, as a workspace that never
// existed is, not the store's failure (a foreign key's violation), on both databases.
func TestCreateInVanishedWorkspace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	const gone = "00000000-0000-0000-0000-00000000dead"
	onEachDialect(t, func(t *testing.T, db *gorm.DB) {
		ws, err := NewAccountStore(db).DefaultWorkspace(ctx)
		if err != nil {
			t.Fatal(err)
		}
		guardrails, presets := NewGuardrailStore(db), NewPresetStore(db)
		createGuardrail := func(id, workspace string) error {
			return guardrails.CreateGuardrail(ctx, guardrail.Guardrail{ID: id, WorkspaceID: workspace, Spec: guardrail.Spec{Name: "g"}, CreatedAt: now})
		}
		createPreset := func(id, workspace string) error {
			_, _, err := presets.AddVersion(ctx, workspace, "p", func(p *preset.Preset, next int) (preset.Preset, preset.Version, error) {
				return preset.AddVersion(p, workspace, "p", next, preset.Draft{Config: map[string]any{}, CreatorID: "key:x",
					PresetID: id, VersionID: id + "-v", Now: now})
			})
			return err
		}
		for _, tt := range []struct {
			name      string
			create    func(id, workspace string) error
			id        string
			workspace string
			vanished  bool
		}{
			{"a guardrail in a workspace that exists", createGuardrail, "g-1", ws.ID, false},
			{"a guardrail in a workspace deleted meanwhile", createGuardrail, "g-2", gone, true},
			{"a preset in a workspace that exists", createPreset, "p-1", ws.ID, false},
			{"a preset in a workspace deleted meanwhile", createPreset, "p-2", gone, true},
		} {
			err := tt.create(tt.id, tt.workspace)
			switch {
			case !tt.vanished && err != nil:
				t.Errorf("%s: %v", tt.name, err)
			case tt.vanished && !errors.Is(err, account.ErrWorkspaceNotFound):
				t.Errorf("%s: %v, want a 400 naming workspace_id", tt.name, err)
			}
		}
	})
}
