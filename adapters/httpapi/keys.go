package httpapi

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/ports"
)

// KeysHandler serves /keys (management) and /key (any key).
type KeysHandler struct {
	keys ports.KeyService
	// defaultRPM is reported by GET /key for keys without their own rate limit.
	defaultRPM DefaultRateLimit
}

// DefaultRateLimit is the configured requests per minute for keys without an override (0: unlimited).
type DefaultRateLimit int

func NewKeysHandler(keys ports.KeyService, rpm DefaultRateLimit) *KeysHandler {
	return &KeysHandler{keys: keys, defaultRPM: rpm}
}

// keyInfo is the reference's KeyInfo: every key present, nullable ones as null.
type keyInfo struct {
	Hash               string  `json:"hash"`
	Name               string  `json:"name"`
	Label              string  `json:"label"`
	Disabled           bool    `json:"disabled"`
	Limit              *usd    `json:"limit"`
	LimitRemaining     *usd    `json:"limit_remaining"`
	LimitReset         *string `json:"limit_reset"`
	IncludeBYOKInLimit bool    `json:"include_byok_in_limit"`
	usageNumbers
	CreatedAt         string  `json:"created_at"`
	UpdatedAt         *string `json:"updated_at"`
	ExpiresAt         *string `json:"expires_at"`
	WorkspaceID       string  `json:"workspace_id"`
	CreatorUserID     *string `json:"creator_user_id"`
	ExternalUser      *string `json:"external_user"`
	IsManagementKey   bool    `json:"is_management_key"`
	RequestsPerMinute *int    `json:"requests_per_minute"`
	// TokensPerMinute and TokensPerDay are the key's own token limits (null: the configured default).
	TokensPerMinute *int64 `json:"tokens_per_minute"`
	TokensPerDay    *int64 `json:"tokens_per_day"`
}

type usageNumbers struct {
	Usage            usd `json:"usage"`
	UsageDaily       usd `json:"usage_daily"`
	UsageWeekly      usd `json:"usage_weekly"`
	UsageMonthly     usd `json:"usage_monthly"`
	BYOKUsage        usd `json:"byok_usage"`
	BYOKUsageDaily   usd `json:"byok_usage_daily"`
	BYOKUsageWeekly  usd `json:"byok_usage_weekly"`
	BYOKUsageMonthly usd `json:"byok_usage_monthly"`
}

func usageOf(u account.Usage) usageNumbers {
	return usageNumbers{Usage: usd(u.Total), UsageDaily: usd(u.Daily), UsageWeekly: usd(u.Weekly), UsageMonthly: usd(u.Monthly)}
}

func limitReset(i domain.Interval) *string {
	if i == domain.IntervalNone {
		return nil
	}
	s := string(i)
	return &s
}

func toKeyInfo(v ports.KeyView) keyInfo {
	var rpm *int
	if v.RequestsPerMinute > 0 {
		rpm = &v.RequestsPerMinute
	}
	return keyInfo{
		Hash: v.Hash, Name: v.Name, Label: v.Label, Disabled: v.Disabled,
		Limit: usdPtr(v.Limit), LimitRemaining: usdPtr(v.Remaining(v.Usage)), LimitReset: limitReset(v.LimitReset),
		IncludeBYOKInLimit: v.IncludeBYOKInLimit, usageNumbers: usageOf(v.Usage),
		CreatedAt: timestamp(v.CreatedAt), UpdatedAt: timestampPtr(v.UpdatedAt), ExpiresAt: timestampPtr(v.ExpiresAt),
		WorkspaceID: v.WorkspaceID, CreatorUserID: v.CreatorUserID, ExternalUser: v.ExternalUser,
		IsManagementKey: v.Management, RequestsPerMinute: rpm, TokensPerMinute: positive(v.Tokens.PerMinute),
		TokensPerDay: positive(v.Tokens.PerDay),
	}
}

// positive is a limit of the key's own, nil for none.
func positive(n int64) *int64 {
	if n <= 0 {
		return nil
	}
	return &n
}

type createKeyReq struct {
	Name               *string `json:"name"`
	Limit              *usd    `json:"limit"`
	LimitReset         *string `json:"limit_reset"`
	IncludeBYOKInLimit *bool   `json:"include_byok_in_limit"`
	ExpiresAt          *string `json:"expires_at"`
	CreatorUserID      *string `json:"creator_user_id"`
	WorkspaceID        *string `json:"workspace_id"`
	External           *struct {
		User string `json:"user"`
	} `json:"external"`
}

func (h *KeysHandler) create(c *gin.Context) {
	var req createKeyReq
	if err := bindFields(c, &req); err != nil {
		writeError(c, err)
		return
	}
	spec := account.KeySpec{Limit: (*domain.Micros)(req.Limit), CreatorUserID: req.CreatorUserID}
	if req.Name == nil {
		writeError(c, domain.Invalid("name", "is required"))
		return
	}
	spec.Name = *req.Name
	var err error
	if spec.LimitReset, err = parseInterval("limit_reset", req.LimitReset); err != nil {
		writeError(c, err)
		return
	}
	if spec.ExpiresAt, err = parseTime("expires_at", req.ExpiresAt); err != nil {
		writeError(c, err)
		return
	}
	if req.IncludeBYOKInLimit != nil {
		spec.IncludeBYOKInLimit = *req.IncludeBYOKInLimit
	}
	if req.WorkspaceID != nil {
		spec.WorkspaceID = *req.WorkspaceID
	}
	if req.External != nil && req.External.User != "" {
		spec.ExternalUser = &req.External.User
	}
	v, secret, err := h.keys.CreateKey(c.Request.Context(), principal(c), spec)
	if err != nil {
		writeError(c, err)
		return
	}
	c.JSON(http.StatusCreated, gin.H{"data": toKeyInfo(v), "key": secret})
}

func parseInterval(field string, s *string) (domain.Interval, error) {
	if s == nil {
		return domain.IntervalNone, nil
	}
	i, err := domain.ParseInterval(*s)
	if err != nil {
		return "", domain.Invalid(field, err.Error())
	}
	return i, nil
}

// parseTime reads an ISO 8601 timestamp with seconds and a zone, as the reference requires.
func parseTime(field string, s *string) (*time.Time, error) {
	if s == nil {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		return nil, domain.Invalid(field, "must be an ISO 8601 timestamp with seconds and a zone, like 2030-01-01T00:00:00Z")
	}
	t = t.UTC()
	return &t, nil
}

func (h *KeysHandler) list(c *gin.Context) {
	includeDisabled, err := queryBool(c, "include_disabled")
	if err != nil {
		writeError(c, err)
		return
	}
	offset, err := queryInt(c, "offset", 0, 0, 1<<31-1)
	if err != nil {
		writeError(c, err)
		return
	}
	views, err := h.keys.ListKeys(c.Request.Context(), ports.KeyFilter{
		WorkspaceID: c.Query("workspace_id"), IncludeDisabled: includeDisabled, Offset: offset,
	})
	if err != nil {
		writeError(c, err)
		return
	}
	out := make([]keyInfo, len(views))
	for i, v := range views {
		out[i] = toKeyInfo(v)
	}
	data(c, http.StatusOK, out)
}

func (h *KeysHandler) get(c *gin.Context) {
	v, err := h.keys.GetKey(c.Request.Context(), c.Param("hash"))
	if err != nil {
		writeError(c, err)
		return
	}
	data(c, http.StatusOK, toKeyInfo(v))
}

// updateKeyReq is UpdateKey: null clears limit, limit_reset, requests_per_minute, tokens_per_minute and tokens_per_day
// (the last three back to the default), and
// is a 400 on fields that cannot be cleared.
type updateKeyReq struct {
	Name               opt[string] `json:"name"`
	Disabled           opt[bool]   `json:"disabled"`
	Limit              opt[usd]    `json:"limit"`
	LimitReset         opt[string] `json:"limit_reset"`
	IncludeBYOKInLimit opt[bool]   `json:"include_byok_in_limit"`
	RequestsPerMinute  opt[int]    `json:"requests_per_minute"`
	TokensPerMinute    opt[int64]  `json:"tokens_per_minute"`
	TokensPerDay       opt[int64]  `json:"tokens_per_day"`
}

func (r updateKeyReq) change() (account.KeyChange, error) {
	change := account.KeyChange{
		Limit: domain.Patch[domain.Micros]{Set: r.Limit.set, Value: (*domain.Micros)(r.Limit.val)},
	}
	var err error
	if change.Name, err = r.Name.keep("name"); err != nil {
		return change, err
	}
	if change.Disabled, err = r.Disabled.keep("disabled"); err != nil {
		return change, err
	}
	if change.IncludeBYOKInLimit, err = r.IncludeBYOKInLimit.keep("include_byok_in_limit"); err != nil {
		return change, err
	}
	if r.RequestsPerMinute.set {
		rpm := 0 // null: the configured default again
		if r.RequestsPerMinute.val != nil {
			rpm = *r.RequestsPerMinute.val
		}
		change.RequestsPerMinute = &rpm
	}
	change.TokensPerMinute, change.TokensPerDay = orDefault(r.TokensPerMinute), orDefault(r.TokensPerDay)
	return change, nil
}

// orDefault is a limit set by a PATCH: nil when absent (kept), 0 when null (the configured default again).
func orDefault(o opt[int64]) *int64 {
	if !o.set {
		return nil
	}
	var n int64
	if o.val != nil {
		n = *o.val
	}
	return &n
}

func (h *KeysHandler) update(c *gin.Context) {
	var req updateKeyReq
	if err := bindFields(c, &req); err != nil {
		writeError(c, err)
		return
	}
	change, err := req.change()
	if err != nil {
		writeError(c, err)
		return
	}
	if req.LimitReset.set {
		change.LimitReset.Set = true
		if req.LimitReset.val != nil {
			i, err := parseInterval("limit_reset", req.LimitReset.val)
			if err != nil {
				writeError(c, err)
				return
			}
			change.LimitReset.Value = &i
		}
	}
	v, err := h.keys.UpdateKey(c.Request.Context(), c.Param("hash"), change)
	if err != nil {
		writeError(c, err)
		return
	}
	data(c, http.StatusOK, toKeyInfo(v))
}

func (h *KeysHandler) delete(c *gin.Context) {
	if err := h.keys.DeleteKey(c.Request.Context(), c.Param("hash")); err != nil {
		writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"deleted": true})
}

// currentKey is the reference's CurrentKey (GET /key): no hash, name or dates, but rate-limit objects.
type currentKey struct {
	Label              string  `json:"label"`
	IsFreeTier         bool    `json:"is_free_tier"`
	IsManagementKey    bool    `json:"is_management_key"`
	IsProvisioningKey  bool    `json:"is_provisioning_key"`
	IncludeBYOKInLimit bool    `json:"include_byok_in_limit"`
	Limit              *usd    `json:"limit"`
	LimitRemaining     *usd    `json:"limit_remaining"`
	LimitReset         *string `json:"limit_reset"`
	usageNumbers
	AllowedDataRegions     []string          `json:"allowed_data_regions"`
	RateLimit              rateLimitInfo     `json:"rate_limit"`
	FreeModelDailyRequests freeModelRequests `json:"free_model_daily_requests"`
	CreatorUserID          *string           `json:"creator_user_id"`
	OrganizationID         *string           `json:"organization_id"`
	WorkspaceID            *string           `json:"workspace_id"`
	ExpiresAt              *string           `json:"expires_at"`
}

type rateLimitInfo struct {
	Requests int    `json:"requests"`
	Interval string `json:"interval"`
	Note     string `json:"note"`
}

type freeModelRequests struct {
	Limit     int `json:"limit"`
	Remaining int `json:"remaining"`
	Used      int `json:"used"`
}

func (h *KeysHandler) current(c *gin.Context) {
	p := principal(c)
	v, err := h.keys.GetKey(c.Request.Context(), p.KeyHash)
	if err != nil {
		writeError(c, err)
		return
	}
	rpm := int(h.defaultRPM)
	if v.RequestsPerMinute > 0 {
		rpm = v.RequestsPerMinute
	}
	note := "requests per minute for this key; 0 means unlimited"
	data(c, http.StatusOK, currentKey{
		Label: v.Label, IsManagementKey: v.Management, IsProvisioningKey: v.Management,
		IncludeBYOKInLimit: v.IncludeBYOKInLimit, Limit: usdPtr(v.Limit), LimitRemaining: usdPtr(v.Remaining(v.Usage)),
		LimitReset: limitReset(v.LimitReset), usageNumbers: usageOf(v.Usage), AllowedDataRegions: []string{},
		RateLimit:     rateLimitInfo{Requests: rpm, Interval: "1m", Note: note},
		CreatorUserID: v.CreatorUserID, OrganizationID: &p.OrganizationID, WorkspaceID: &v.WorkspaceID,
		ExpiresAt: timestampPtr(v.ExpiresAt),
	})
}
