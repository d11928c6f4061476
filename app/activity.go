package app

import (
	"context"
	"fmt"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/ports"
)

// maxActivityDays bounds the days one activity read spans: a year and a day, a few thousand aggregate rows at most
// per model and endpoint.
const maxActivityDays = 367

// Activity reads usage from the activity aggregates the store keeps as it writes records: never a scan of the
// records themselves.
type Activity struct {
	store ports.ActivityStore
	dir   ports.Directory
	env   Env
}

var _ ports.ActivityService = (*Activity)(nil)

func NewActivity(store ports.ActivityStore, dir ports.Directory, env Env) *Activity {
	return &Activity{store: store, dir: dir, env: env}
}

// Activity answers the query's days (by default today and the ports.ActivityDays before it) for the caller's
// workspaces: a key that is not a management key reads its own workspace's only, whatever it names, and a
// management key naming a workspace that does not exist is told so (400 workspace_id) rather than answered
// nothing.
func (a *Activity) Activity(ctx context.Context, by account.Principal, q ports.ActivityQuery) ([]generation.Activity, error) {
	today := generation.Day(a.env.Now())
	f := q.ActivityFilter
	if !q.Date.IsZero() {
		day := generation.Day(q.Date)
		if day.After(today) || day.Before(today.AddDate(0, 0, -ports.ActivityDays)) {
			return nil, domain.Invalid("date", fmt.Sprintf("must be a UTC day (YYYY-MM-DD) from %s to %s: the last %d days and today",
				today.AddDate(0, 0, -ports.ActivityDays).Format(time.DateOnly), today.Format(time.DateOnly), ports.ActivityDays))
		}
		f.From, f.To = day, day.AddDate(0, 0, 1)
	}
	if f.From.IsZero() {
		f.From = today.AddDate(0, 0, -ports.ActivityDays)
	}
	if f.To.IsZero() {
		f.To = today.AddDate(0, 0, 1)
	}
	if !f.From.Before(f.To) {
		return nil, domain.Invalid("from", "must be before to")
	}
	if f.To.Sub(f.From) > maxActivityDays*24*time.Hour {
		return nil, domain.Invalid("from", fmt.Sprintf("the days read span at most %d", maxActivityDays))
	}
	ws, err := scopeWorkspace(ctx, a.dir, by, f.WorkspaceID)
	if err != nil {
		return nil, err
	}
	f.WorkspaceID = ws
	return a.store.Activity(ctx, f)
}

// scopeWorkspace is the workspace a caller's read is narrowed to: a key that is not a management key reads its
// own workspace (naming another is naming one that does not exist, for it); a management key reads the one it
// names (which must exist), or every one.
func scopeWorkspace(ctx context.Context, dir ports.Directory, by account.Principal, named string) (string, error) {
	if !by.Management {
		if named != "" && named != by.WorkspaceID {
			return "", account.ErrWorkspaceNotFound
		}
		return by.WorkspaceID, nil
	}
	if named == "" {
		return "", nil
	}
	if _, err := dir.Workspace(ctx, named); err != nil {
		return "", err
	}
	return named, nil
}
