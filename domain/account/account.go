// Package account holds the organization, its workspaces and members, and the API keys that call the gateway.
package account

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboard-ai/switchboard/domain"
)

// DefaultWorkspaceSlug names the workspace that exists from the first migration on.
const DefaultWorkspaceSlug = "default"

type Organization struct {
	ID   string
	Name string
}

type Workspace struct {
	ID          string
	Name        string
	Slug        string
	Description *string
	CreatedAt   time.Time
	UpdatedAt   *time.Time
}

type Role string

const (
	RoleAdmin  Role = "org:admin"
	RoleMember Role = "org:member"
)

type Member struct {
	ID        string
	Email     string
	FirstName *string
	LastName  *string
	Role      Role
	CreatedAt time.Time
}

var (
	ErrKeyNotFound       = domain.E(domain.KindNotFound, "key_not_found", "API key not found")
	ErrKeyExists         = domain.E(domain.KindConflict, "key_exists", "an API key with this secret exists already")
	ErrUnauthenticated   = domain.E(domain.KindUnauthenticated, "unauthenticated", "missing or invalid API key")
	ErrManagementOnly    = domain.E(domain.KindForbidden, "management_key_required", "this operation requires a management key")
	ErrInferenceOnly     = domain.E(domain.KindForbidden, "inference_key_required", "management keys cannot run inference; use an inference key")
	ErrMemberExists      = domain.E(domain.KindConflict, "member_exists", "a member with this email already exists")
	ErrWorkspaceNotFound = domain.E(domain.KindInvalid, "workspace_not_found", "workspace_id: no such workspace").With("field", "workspace_id")
	ErrWorkspaceExists   = domain.E(domain.KindConflict, "workspace_exists", "a workspace with this slug already exists")
)

// NewWorkspace validates a workspace to create; an empty slug is derived from the name.
func NewWorkspace(id, name, slug string, now time.Time) (Workspace, error) {
	name = strings.TrimSpace(name)
	if name == "" || utf8.RuneCountInString(name) > 100 {
		return Workspace{}, domain.Invalid("name", "must be 1 to 100 characters")
	}
	if slug == "" {
		slug = slugify(name)
	}
	if err := domain.ValidateSlug("slug", slug); err != nil {
		return Workspace{}, err
	}
	return Workspace{ID: id, Name: name, Slug: slug, CreatedAt: now.UTC()}, nil
}

func slugify(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimRight(b.String(), "-")
}

// NewMember validates a member to add to the organization.
func NewMember(id, email string, first, last *string, role Role, now time.Time) (Member, error) {
	email = strings.TrimSpace(email)
	if at := strings.IndexByte(email, '@'); at < 1 || at == len(email)-1 || len(email) > 320 || strings.ContainsAny(email, " \t\r\n") {
		return Member{}, domain.Invalid("email", "must be an email address")
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"first_name", first}, {"last_name", last}} {
		if f.v != nil {
			if err := domain.CheckLength(f.name, *f.v, 100); err != nil {
				return Member{}, err
			}
		}
	}
	switch role {
	case "":
		role = RoleMember
	case RoleAdmin, RoleMember:
	default:
		return Member{}, domain.Invalid("role", "must be org:admin or org:member")
	}
	return Member{ID: id, Email: email, FirstName: first, LastName: last, Role: role, CreatedAt: now.UTC()}, nil
}

// Key is an API key as stored: only the SHA-256 hash of the secret is kept.
type Key struct {
	Hash               string
	Name               string
	Label              string
	Management         bool
	Disabled           bool
	Limit              *domain.Micros
	LimitReset         domain.Interval
	IncludeBYOKInLimit bool
	ExpiresAt          *time.Time
	WorkspaceID        string
	CreatorUserID      *string
	ExternalUser       *string
	// RequestsPerMinute overrides the configured default rate limit when positive.
	RequestsPerMinute int
	// Tokens overrides the configured default token limits, each when positive.
	Tokens    TokenLimits
	CreatedAt time.Time
	UpdatedAt *time.Time
}

// MaxRequestsPerMinute bounds a key's own rate limit: the most a stored limit can be (PostgreSQL's integer).
const MaxRequestsPerMinute = math.MaxInt32

// Usage is what a key has spent: in total and in the current day, week and month (UTC).
type Usage struct {
	Total, Daily, Weekly, Monthly domain.Micros
}

// In returns the spend inside the window of interval i.
func (u Usage) In(i domain.Interval) domain.Micros {
	switch i {
	case domain.IntervalDaily:
		return u.Daily
	case domain.IntervalWeekly:
		return u.Weekly
	case domain.IntervalMonthly:
		return u.Monthly
	}
	return u.Total
}

// Remaining is what is left of the key's limit in the current window; nil when the key has no limit.
func (k Key) Remaining(u Usage) *domain.Micros {
	if k.Limit == nil {
		return nil
	}
	r := max(*k.Limit-u.In(k.LimitReset), 0)
	return &r
}

// Usable reports whether the key may authenticate at now.
func (k Key) Usable(now time.Time) bool {
	return !k.Disabled && (k.ExpiresAt == nil || now.Before(*k.ExpiresAt))
}

// Principal is the authenticated caller of one request.
type Principal struct {
	KeyHash        string
	KeyName        string
	Management     bool
	WorkspaceID    string
	CreatorUserID  *string
	OrganizationID string
	RateLimit      int
	// Tokens are the key's own token limits (each 0 for the configured default).
	Tokens TokenLimits
	// Limit and LimitReset are the key's own spending limit, checked before inference calls.
	Limit      *domain.Micros
	LimitReset domain.Interval
}

// SeesWorkspace reports whether the caller may read resources of the workspace: management keys see all.
func (p Principal) SeesWorkspace(id string) bool { return p.Management || p.WorkspaceID == id }

// KeyPrefix starts every secret the gateway issues.
const KeyPrefix = "sk-sb-v1-"

// NewSecret draws a 256-bit secret and returns it with its hash and its display label.
func NewSecret() (secret, hash, label string) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	secret = KeyPrefix + hex.EncodeToString(b[:])
	return secret, HashSecret(secret), Label(secret)
}

// Label is how a key is shown after creation: enough to recognise it, too little to use it.
func Label(secret string) string {
	if len(secret) < 24 {
		return "..."
	}
	return secret[:12] + "..." + secret[len(secret)-3:]
}

// HashSecret is how a secret is stored and looked up.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// KeySpec is a validated request for a new key.
type KeySpec struct {
	Name               string
	Management         bool
	WorkspaceID        string
	Limit              *domain.Micros
	LimitReset         domain.Interval
	IncludeBYOKInLimit bool
	ExpiresAt          *time.Time
	CreatorUserID      *string
	ExternalUser       *string
}

// ValidateName checks a key name: 1 to 200 characters after trimming.
func ValidateName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" || utf8.RuneCountInString(name) > 200 {
		return "", domain.Invalid("name", "must be 1 to 200 characters")
	}
	return name, nil
}

// NewKey validates spec and builds the stored key for a fresh secret.
func NewKey(spec KeySpec, hash, label string, now time.Time) (Key, error) {
	name, err := ValidateName(spec.Name)
	if err != nil {
		return Key{}, err
	}
	if spec.ExpiresAt != nil && !spec.ExpiresAt.After(now) {
		return Key{}, domain.Invalid("expires_at", "must be in the future")
	}
	if spec.Limit != nil && *spec.Limit < 0 {
		return Key{}, domain.Invalid("limit", "must not be negative")
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"external.user", spec.ExternalUser}, {"creator_user_id", spec.CreatorUserID}} {
		if f.v != nil {
			if err := domain.CheckLength(f.name, *f.v, 256); err != nil {
				return Key{}, err
			}
		}
	}
	return Key{
		Hash: hash, Name: name, Label: label, Management: spec.Management,
		Limit: spec.Limit, LimitReset: spec.LimitReset, IncludeBYOKInLimit: spec.IncludeBYOKInLimit,
		ExpiresAt: spec.ExpiresAt, WorkspaceID: spec.WorkspaceID, CreatorUserID: spec.CreatorUserID,
		ExternalUser: spec.ExternalUser, CreatedAt: now.UTC(),
	}, nil
}

// KeyChange is a partial update of a key.
type KeyChange struct {
	Name               *string
	Disabled           *bool
	Limit              domain.Patch[domain.Micros]
	LimitReset         domain.Patch[domain.Interval]
	IncludeBYOKInLimit *bool
	RequestsPerMinute  *int
	// TokensPerMinute and TokensPerDay set the key's token limits (0: the configured default again).
	TokensPerMinute, TokensPerDay *int64
}

// Apply validates the change and writes it into k.
func (c KeyChange) Apply(k *Key, now time.Time) error {
	if c.Name != nil {
		name, err := ValidateName(*c.Name)
		if err != nil {
			return err
		}
		k.Name = name
	}
	if c.Disabled != nil {
		k.Disabled = *c.Disabled
	}
	if c.Limit.Value != nil && *c.Limit.Value < 0 {
		return domain.Invalid("limit", "must not be negative")
	}
	c.Limit.Apply(&k.Limit)
	if c.LimitReset.Set {
		k.LimitReset = domain.IntervalNone
		if c.LimitReset.Value != nil {
			k.LimitReset = *c.LimitReset.Value
		}
	}
	if c.IncludeBYOKInLimit != nil {
		k.IncludeBYOKInLimit = *c.IncludeBYOKInLimit
	}
	if c.RequestsPerMinute != nil {
		if n := *c.RequestsPerMinute; n < 0 || n > MaxRequestsPerMinute {
			return domain.Invalid("requests_per_minute", fmt.Sprintf("must be from 0 to %d", MaxRequestsPerMinute))
		}
		k.RequestsPerMinute = *c.RequestsPerMinute
	}
	for _, l := range [...]struct {
		name string
		v    *int64
		dst  *int64
	}{{"tokens_per_minute", c.TokensPerMinute, &k.Tokens.PerMinute}, {"tokens_per_day", c.TokensPerDay, &k.Tokens.PerDay}} {
		if l.v == nil {
			continue
		}
		if *l.v < 0 || *l.v > MaxTokens {
			return domain.Invalid(l.name, fmt.Sprintf("must be from 0 to %d", int64(MaxTokens)))
		}
		*l.dst = *l.v
	}
	t := now.UTC()
	k.UpdatedAt = &t
	return nil
}
