package generation

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
)

// ActivityKey is what one aggregate row of activity counts: the calls of one UTC day, workspace, key (with the
// member who owns it) and model, answered by one provider's endpoint. A call that reached no provider counts
// with an empty provider and endpoint.
type ActivityKey struct {
	// Day is the UTC day the calls were made, at midnight UTC.
	Day          time.Time
	WorkspaceID  string
	KeyHash      string
	UserID       string
	Model        string
	ProviderName string
	EndpointID   string
}

// Usage is what calls used: how many there were, their tokens and what they cost.
type Usage struct {
	Requests         int64
	PromptTokens     int64
	CompletionTokens int64
	ReasoningTokens  int64
	CachedTokens     int64
	Cost             domain.Micros
	// BYOKCost is the cost of the calls made with the caller's own provider key.
	BYOKCost domain.Micros
}

// Add sums two usages.
func (u Usage) Add(o Usage) Usage {
	u.Requests += o.Requests
	u.PromptTokens += o.PromptTokens
	u.CompletionTokens += o.CompletionTokens
	u.ReasoningTokens += o.ReasoningTokens
	u.CachedTokens += o.CachedTokens
	u.Cost += o.Cost
	u.BYOKCost += o.BYOKCost
	return u
}

// Activity is one aggregate row: the usage of the calls its key names. A row read with some dimensions summed
// over has those left empty (see ports.ActivityFilter).
type Activity struct {
	ActivityKey
	Usage
}

// Day is t's UTC day, at midnight UTC: the day a record counts in, and the day its store keeps it in.
func Day(t time.Time) time.Time {
	return domain.IntervalDaily.Start(t)
}

// EndpointID is the endpoint that answered the call: its last attempt's, or empty when no provider was tried.
func (r *Record) EndpointID() string {
	if n := len(r.Attempts); n > 0 {
		return r.Attempts[n-1].EndpointID
	}
	return ""
}

// Activity is the record's share of activity: one request, counted in its key's row.
func (r *Record) Activity() Activity {
	a := Activity{
		ActivityKey: ActivityKey{Day: Day(r.CreatedAt), WorkspaceID: r.WorkspaceID, KeyHash: r.KeyHash, Model: r.Model,
			ProviderName: r.ProviderName, EndpointID: r.EndpointID()},
		Usage: Usage{Requests: 1, PromptTokens: r.Counts.TokensPrompt, CompletionTokens: r.Counts.TokensCompletion,
			ReasoningTokens: r.Counts.NativeTokensReasoning, CachedTokens: r.Counts.NativeTokensCached, Cost: r.TotalCost},
	}
	if r.UserID != nil {
		a.UserID = *r.UserID
	}
	if r.BYOK {
		a.BYOKCost = r.TotalCost
	}
	return a
}

// Aggregate sums the activity of the entries' records, a row per key, in the keys' order (CompareActivityKeys):
// writers that touch rows in that order cannot deadlock each other.
func Aggregate(entries []Entry) []Activity {
	rows := make([]Activity, len(entries))
	for i := range entries {
		rows[i] = entries[i].Record.Activity()
	}
	return Sum(rows, func(k ActivityKey) ActivityKey { return k })
}

// Sum adds up rows by the key by makes of each, in the keys' order.
func Sum(rows []Activity, by func(ActivityKey) ActivityKey) []Activity {
	sums := make(map[ActivityKey]Usage, len(rows))
	for _, a := range rows {
		k := by(a.ActivityKey)
		sums[k] = sums[k].Add(a.Usage)
	}
	out := make([]Activity, 0, len(sums))
	for k, u := range sums {
		out = append(out, Activity{k, u})
	}
	slices.SortFunc(out, func(a, b Activity) int { return CompareActivityKeys(a.ActivityKey, b.ActivityKey) })
	return out
}

// WorkspaceKey is the key of the row that sums a workspace's keys: k without its key and member.
func WorkspaceKey(k ActivityKey) ActivityKey {
	k.KeyHash, k.UserID = "", ""
	return k
}

// KeyTotalKey is the key of the row that sums a key's calls of a day: k without its member, model, provider and
// endpoint.
func KeyTotalKey(k ActivityKey) ActivityKey {
	return ActivityKey{Day: k.Day, WorkspaceID: k.WorkspaceID, KeyHash: k.KeyHash}
}

// CompareActivityKeys orders keys by day, then workspace, key, member, model, provider and endpoint.
func CompareActivityKeys(a, b ActivityKey) int {
	return cmp.Or(a.Day.Compare(b.Day), strings.Compare(a.WorkspaceID, b.WorkspaceID), strings.Compare(a.KeyHash, b.KeyHash),
		strings.Compare(a.UserID, b.UserID), strings.Compare(a.Model, b.Model), strings.Compare(a.ProviderName, b.ProviderName),
		strings.Compare(a.EndpointID, b.EndpointID))
}

// MaxIDSkew bounds how far a record's CreatedAt lies from the time its id carries (see IDTime): the call's start,
// where its record is created, or for a video job the job's creation, once the provider took it.
const MaxIDSkew = 24 * time.Hour

// IDTime is the time a generation id made by NewID carries, to the second, and false for an id of another form.
// A store that keeps records by time finds one by its id there, within MaxIDSkew.
func IDTime(id string) (time.Time, bool) {
	rest, ok := strings.CutPrefix(id, "gen-")
	if !ok {
		return time.Time{}, false
	}
	secs, _, ok := strings.Cut(rest, "-")
	// Ten digits hold the seconds until the year 2286; twelve bound what strconv reads without overflow.
	if !ok || secs == "" || len(secs) > 12 || strings.TrimLeft(secs, "0123456789") != "" {
		return time.Time{}, false
	}
	n, err := strconv.ParseInt(secs, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(n, 0).UTC(), true
}
