package ports

import (
	"context"
	"time"

	"github.com/switchboard-ai/switchboard/domain/account"
)

// TokenLimiter counts the tokens keys' calls use against their token limits (a minute's and a day's): calls are
// admitted while a key has tokens left, and what each used is counted once the upstream said. It always decides: an
// implementation whose shared state is unreachable decides from what it has, as a RateLimiter does.
type TokenLimiter interface {
	// Admit reports whether key has tokens left under each of limits, with the figures of the limit that has the
	// fewest (none when limits are zero).
	Admit(ctx context.Context, key string, limits account.TokenLimits) TokenDecision
	// Spend counts n tokens against key's limits. Past a limit, the key's calls wait until it has room again.
	Spend(ctx context.Context, key string, limits account.TokenLimits, n int64)
}

// TokenDecision is the outcome of a token limit's check, with what the caller is told in headers: the limit (a
// minute's or a day's, Window), the tokens left, when it is full again, and when refused, how long to wait.
type TokenDecision struct {
	Allowed    bool
	Window     string
	Limit      int64
	Remaining  int64
	Reset      time.Time
	RetryAfter time.Duration
}

// Decide is the decision of a key's token windows at now: refused by the first window with no token left,
// otherwise allowed, with the figures of the window that has the fewest left.
func Decide(states []account.TokenState, now time.Time) TokenDecision {
	d := TokenDecision{Allowed: true}
	for i, s := range states {
		if !s.Allowed() {
			return TokenDecision{Window: s.Window.Name, Limit: s.Window.Limit, Remaining: 0, Reset: now.Add(s.Reset()),
				RetryAfter: s.RetryAfter()}
		}
		if i == 0 || s.Remaining() < d.Remaining {
			d = TokenDecision{Allowed: true, Window: s.Window.Name, Limit: s.Window.Limit, Remaining: s.Remaining(), Reset: now.Add(s.Reset())}
		}
	}
	return d
}
