package app

import (
	"context"
	"sync"
	"time"

	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/ports"
)

// LocalTokenLimiter keeps the keys' token windows in this process (account.TokenState): with several replicas and
// no Redis, each replica admits a key's full limits.
type LocalTokenLimiter struct {
	now     func() time.Time
	mu      sync.Mutex
	windows map[tokenKey]time.Time // each window's theoretical arrival time
}

type tokenKey struct {
	key    string
	window string
}

var _ ports.TokenLimiter = (*LocalTokenLimiter)(nil)

func NewLocalTokenLimiter(env Env) *LocalTokenLimiter {
	return &LocalTokenLimiter{now: env.Now, windows: map[tokenKey]time.Time{}}
}

func (l *LocalTokenLimiter) Admit(_ context.Context, key string, limits account.TokenLimits) ports.TokenDecision {
	if limits.Zero() {
		return ports.TokenDecision{Allowed: true}
	}
	now := l.now()
	return ports.Decide(l.states(key, limits, now, 0), now)
}

func (l *LocalTokenLimiter) Spend(_ context.Context, key string, limits account.TokenLimits, n int64) {
	if limits.Zero() || n <= 0 {
		return
	}
	l.states(key, limits, l.now(), n)
}

// states are key's windows at now, after n more tokens.
func (l *LocalTokenLimiter) states(key string, limits account.TokenLimits, now time.Time, n int64) []account.TokenState {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []account.TokenState
	for _, w := range limits.Windows() {
		k := tokenKey{key, w.Name}
		s := account.TokenState{Window: w, Ahead: l.windows[k].Sub(now)}
		if n > 0 {
			s = s.Spent(n)
			l.windows[k] = now.Add(s.Ahead)
		}
		out = append(out, s)
	}
	return out
}

// DefaultTokenLimits are the configured token limits of keys without their own.
type DefaultTokenLimits account.TokenLimits

// TokenMeter counts what inference calls used against their keys' token limits (their own, or the default).
type TokenMeter struct {
	limiter  ports.TokenLimiter
	defaults account.TokenLimits
}

func NewTokenMeter(limiter ports.TokenLimiter, defaults DefaultTokenLimits) *TokenMeter {
	return &TokenMeter{limiter: limiter, defaults: account.TokenLimits(defaults)}
}

// spend counts a call's tokens: after the call, whether its caller is still there or not.
func (t *TokenMeter) spend(ctx context.Context, by account.Principal, n int64) {
	limits := by.Tokens.Or(t.defaults)
	if limits.Zero() || n <= 0 {
		return
	}
	t.limiter.Spend(context.WithoutCancel(ctx), by.KeyHash, limits, n)
}
