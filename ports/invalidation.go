package ports

import "context"

// ChangeKind says which cache a Change concerns.
type ChangeKind string

const (
	// KeyChanged: an API key was created, changed (disabled, limit, rate limit, expiry) or deleted; ID is its hash.
	KeyChanged ChangeKind = "key"
	// GuardrailsChanged: a guardrail or an assignment changed; which guardrails apply to whom must be read again.
	GuardrailsChanged ChangeKind = "guardrails"
	// WorkspaceChanged: a workspace's budgets changed, or it was deleted; ID is its id.
	WorkspaceChanged ChangeKind = "workspace"
)

// Change names something cached by every replica that one of them has just changed.
type Change struct {
	Kind ChangeKind
	ID   string
}

// ChangeNotifier tells every replica (this one included) about a committed change, so that each drops what it
// cached at once. It is best effort: a notification that cannot be sent is logged by the adapter, and the caches'
// TTL is the safety net.
type ChangeNotifier interface {
	Notify(ctx context.Context, c Change)
}

// CacheInvalidator is what a replica's listener calls: Invalidate for each change any replica notified, and
// Flush after it (re)connects, since changes may have been missed while it was not listening.
type CacheInvalidator interface {
	Invalidate(c Change)
	Flush()
}
