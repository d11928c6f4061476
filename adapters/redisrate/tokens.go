package redisrate

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/ports"
)

// Tokens keeps the keys' token windows (account.TokenState) in Redis, one key per key and window holding its
// theoretical arrival time, so that every replica counts against one limit. It shares its Limiter's client and
// its view of Redis's health: while Redis is unreachable, the windows are the fallback's, per replica.
type Tokens struct {
	limiter  *Limiter
	fallback ports.TokenLimiter
}

var _ ports.TokenLimiter = (*Tokens)(nil)

// NewTokens keeps the token windows in the Redis the rate limiter uses, and in fallback while it is unreachable.
func NewTokens(l *Limiter, fallback ports.TokenLimiter) *Tokens {
	return &Tokens{limiter: l, fallback: fallback}
}

// tokenScript reads (n = 0) or moves ahead (n > 0) a key's windows, on Redis's own clock (so that replicas whose
// clocks differ share one): for each window, KEYS[i] holds its theoretical arrival time in microseconds, ARGV[1]
// is n and ARGV[i+1] the window's interval in microseconds (a token's share of its period). It returns how far
// ahead of now each window is, in microseconds. A window's key expires once it is full again.
var tokenScript = redis.NewScript(`
redis.replicate_commands()
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local n = tonumber(ARGV[1])
local out = {}
for i, key in ipairs(KEYS) do
  local tat = tonumber(redis.call('GET', key) or '0')
  if tat < now then tat = now end
  if n > 0 then
    tat = tat + n * tonumber(ARGV[i + 1])
    redis.call('SET', key, string.format('%.0f', tat), 'PX', math.ceil((tat - now) / 1000) + 1)
  end
  out[i] = string.format('%.0f', tat - now)
end
return out
`)

func (t *Tokens) Admit(ctx context.Context, key string, limits account.TokenLimits) ports.TokenDecision {
	if limits.Zero() {
		return ports.TokenDecision{Allowed: true}
	}
	if states, ok := t.run(ctx, key, limits, 0); ok {
		return ports.Decide(states, t.limiter.now())
	}
	return t.fallback.Admit(ctx, key, limits)
}

func (t *Tokens) Spend(ctx context.Context, key string, limits account.TokenLimits, n int64) {
	if limits.Zero() || n <= 0 {
		return
	}
	if _, ok := t.run(ctx, key, limits, n); !ok {
		t.fallback.Spend(ctx, key, limits, n)
	}
}

// run runs the script for key's windows; ok is false when Redis did not answer (the fallback decides then).
func (t *Tokens) run(ctx context.Context, key string, limits account.TokenLimits, n int64) ([]account.TokenState, bool) {
	if !t.limiter.useRedis() {
		return nil, false
	}
	windows := limits.Windows()
	keys := make([]string, len(windows))
	args := make([]any, 0, len(windows)+1)
	args = append(args, n)
	for i, w := range windows {
		keys[i] = keyPrefix + "tokens:" + w.Name + ":" + key
		args = append(args, strconv.FormatFloat(float64(w.Interval())/float64(time.Microsecond), 'f', -1, 64))
	}
	rctx, cancel := context.WithTimeout(ctx, Timeout) // a Redis that hangs costs a call what it costs the rate limit
	ahead, err := tokenScript.Run(rctx, t.limiter.client, keys, args...).StringSlice()
	cancel()
	if err != nil || len(ahead) != len(windows) {
		if ctx.Err() == nil { // a caller who hung up says nothing about Redis
			t.limiter.failed(err)
		}
		return nil, false
	}
	t.limiter.up()
	states := make([]account.TokenState, len(windows))
	for i, w := range windows {
		us, _ := strconv.ParseInt(ahead[i], 10, 64)
		states[i] = account.TokenState{Window: w, Ahead: time.Duration(us) * time.Microsecond}
	}
	return states, true
}
