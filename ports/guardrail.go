package ports

import (
	"context"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/domain/guardrail"
)

type GuardrailStore interface {
	CreateGuardrail(ctx context.Context, g guardrail.Guardrail) error
	// Guardrail returns guardrail.ErrNotFound for an unknown id.
	Guardrail(ctx context.Context, id string) (guardrail.Guardrail, error)
	// ListGuardrails lists guardrails, of one workspace when workspaceID is not empty, newest first.
	ListGuardrails(ctx context.Context, workspaceID string, p Page) ([]guardrail.Guardrail, int, error)
	UpdateGuardrail(ctx context.Context, id string, change func(*guardrail.Guardrail) error) (guardrail.Guardrail, error)
	// DeleteGuardrail removes the guardrail and its assignments.
	DeleteGuardrail(ctx context.Context, id string) error
	// Applicable returns the guardrails assigned to the key and to the member who owns it.
	Applicable(ctx context.Context, keyHash string, userID *string) ([]guardrail.Guardrail, error)
}

// MemberAssignment and KeyAssignment tie a member or a key to its one guardrail.
type MemberAssignment struct {
	ID, UserID, GuardrailID string
	AssignedBy              *string
	CreatedAt               time.Time
}

type KeyAssignment struct {
	ID, KeyHash, KeyName, KeyLabel, GuardrailID string
	AssignedBy                                  *string
	CreatedAt                                   time.Time
}

// AssignmentStore keeps who holds which guardrail: a member or a key holds at most one (a unique constraint).
type AssignmentStore interface {
	// AssignMembers assigns each user (sorted, distinct) to the guardrail, moving it from another; it returns how
	// many assignments were created or moved. Returns guardrail.ErrNotFound when the guardrail is gone.
	AssignMembers(ctx context.Context, guardrailID string, userIDs []string, by *string, now time.Time) (int, error)
	UnassignMembers(ctx context.Context, guardrailID string, userIDs []string) (int, error)
	AssignKeys(ctx context.Context, guardrailID string, keyHashes []string, by *string, now time.Time) (int, error)
	UnassignKeys(ctx context.Context, guardrailID string, keyHashes []string) (int, error)
	// MemberAssignments and KeyAssignments list one guardrail's (or every guardrail's, for "") assignments.
	MemberAssignments(ctx context.Context, guardrailID string, p Page) ([]MemberAssignment, int, error)
	KeyAssignments(ctx context.Context, guardrailID string, p Page) ([]KeyAssignment, int, error)
	// UnknownKeys returns the hashes in hashes that name no key, in the order given.
	UnknownKeys(ctx context.Context, hashes []string) ([]string, error)
}

// BudgetStore holds each guardrail's spend per window, and the reservations of calls in flight.
type BudgetStore interface {
	// Reserve atomically records a hold of amount when spent plus live holds plus amount stays within limit,
	// and says whether it did, or what was left. Holds past expires no longer count (a crashed gateway's calls).
	Reserve(ctx context.Context, h guardrail.Hold, limit domain.Micros, now, expires time.Time) (Reservation, error)
	// Settle releases the hold and adds actual to the window's spend.
	Settle(ctx context.Context, h guardrail.Hold, actual domain.Micros) error
	// Spent is the settled spend of a guardrail in a window.
	Spent(ctx context.Context, guardrailID string, window time.Time) (domain.Micros, error)
}

// Admission is an inference call about to be routed.
type Admission struct {
	// ID is the call's generation id: the holds against the key's limit and the credits carry it, and writing
	// the call's generation entry releases them.
	ID        string
	Model     string
	Endpoints []catalog.Endpoint
	// Texts are what will be sent upstream (speech input, video prompt, chat messages' text parts); the last Fixed
	// of them go as they came, whatever a redaction makes of them.
	Texts []string
	Fixed int
	// Estimate is the cost of the call on an endpoint, reserved against budgets before the call.
	Estimate func(catalog.Endpoint, []string) domain.Micros
	// Hold is how long a reservation may stay unsettled.
	Hold time.Duration
}

// Admitted is what the guardrails let through.
type Admitted struct {
	Endpoints []catalog.Endpoint
	Texts     []string
	Flags     []string
	Holds     []guardrail.Hold
}

// GuardrailEnforcer is what inference use cases call before routing; the holds it returns are settled when the
// call's generation entry is written (generation.Entry), or by Settle when the call is refused after them.
type GuardrailEnforcer interface {
	Admit(ctx context.Context, by account.Principal, a Admission) (Admitted, error)
	// Screen is Admit for what is not a call (a token count): the lists and the content filters, no budget.
	Screen(ctx context.Context, by account.Principal, a Admission) (Admitted, error)
	// Settle releases holds and books actual against each one's guardrail window.
	Settle(ctx context.Context, holds []guardrail.Hold, actual domain.Micros)
}

// GuardrailService is the guardrail management use case.
type GuardrailService interface {
	Create(ctx context.Context, by account.Principal, workspaceID string, spec guardrail.Spec) (guardrail.Guardrail, error)
	Get(ctx context.Context, id string) (guardrail.Guardrail, error)
	List(ctx context.Context, workspaceID string, p Page) ([]guardrail.Guardrail, int, error)
	// Update merges patch into the guardrail's fields and validates the result.
	Update(ctx context.Context, id string, patch func(*guardrail.Spec)) (guardrail.Guardrail, error)
	Delete(ctx context.Context, id string) error
	AssignMembers(ctx context.Context, by account.Principal, id string, userIDs []string) (int, error)
	UnassignMembers(ctx context.Context, id string, userIDs []string) (int, error)
	AssignKeys(ctx context.Context, by account.Principal, id string, keyHashes []string) (int, error)
	UnassignKeys(ctx context.Context, id string, keyHashes []string) (int, error)
	MemberAssignments(ctx context.Context, id string, p Page) ([]MemberAssignment, int, error)
	KeyAssignments(ctx context.Context, id string, p Page) ([]KeyAssignment, int, error)
}
