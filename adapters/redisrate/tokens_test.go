package redisrate_test

import (
	"io"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/switchboard-ai/switchboard/adapters/redisrate"
	"github.com/switchboard-ai/switchboard/app"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/test/logsink"
	"github.com/switchboard-ai/switchboard/test/testdb"
)

// tokens is one gateway's token limiter, beside its rate limiter.
func tokens(t *testing.T, url string, c *clock, log io.Writer) *redisrate.Tokens {
	t.Helper()
	return redisrate.NewTokens(replica(t, url, c, log), app.NewLocalTokenLimiter(app.Env{Now: c.Now}))
}

// Replicas share a key's token windows: what one spends, the others see; past a limit every replica refuses it,
// saying when the window has a token again; each window apart, a minute's and a day's.
func TestTokensSharedAcrossReplicas(t *testing.T) {
	t.Parallel()
	url := testdb.RedisURL(t)
	c := &clock{now: time.Now()}
	replicas := []*redisrate.Tokens{tokens(t, url, c, io.Discard), tokens(t, url, c, io.Discard), tokens(t, url, c, io.Discard)}
	ctx := t.Context()
	key := uuid.NewString()
	limits := account.TokenLimits{PerMinute: 6000, PerDay: 1_000_000} // a token each 10 ms, and each 86.4 ms
	for i := range 3 {
		d := replicas[i].Admit(ctx, key, limits)
		// Redis's clock moves on between calls: a window regains a token each 10 ms, so the figures are at least
		// what is left.
		if want := int64(6000 - 2000*i); !d.Allowed || d.Window != "minute" || d.Limit != 6000 || d.Remaining < want || d.Remaining > want+100 {
			t.Fatalf("replica %d, after %d tokens: %+v, want about %d left", i, 2000*i, d, want)
		}
		replicas[i].Spend(ctx, key, limits, 2000)
	}
	replicas[0].Spend(ctx, key, limits, 3000) // past the minute's limit
	for i, r := range replicas {
		d := r.Admit(ctx, key, limits)
		if d.Allowed || d.Window != "minute" || d.Remaining != 0 || d.RetryAfter < 29*time.Second || d.RetryAfter > 30010*time.Millisecond {
			t.Fatalf("replica %d, 3000 tokens past the limit: %+v, want a refusal for about 30 s", i, d)
		}
	}
	day := account.TokenLimits{PerDay: 100}
	other := uuid.NewString()
	replicas[1].Spend(ctx, other, day, 99)
	if d := replicas[2].Admit(ctx, other, day); !d.Allowed || d.Window != "day" || d.Remaining != 1 {
		t.Fatalf("a day's window: %+v", d)
	}
	if d := replicas[0].Admit(ctx, other, account.TokenLimits{}); !d.Allowed || d.Limit != 0 {
		t.Fatalf("no limit: %+v", d)
	}
}

// While Redis is unreachable the windows are each replica's own, as the rate limits are, and Redis's again once
// it answers.
func TestTokensFallBackToPerReplica(t *testing.T) {
	t.Parallel()
	p := newProxy(t, testdb.RedisURL(t))
	c := &clock{now: time.Now()}
	var log logsink.Buffer
	l := tokens(t, p.url(), c, &log)
	ctx := t.Context()
	limits := account.TokenLimits{PerDay: 100}
	key := uuid.NewString()
	l.Spend(ctx, key, limits, 40)
	p.setDown(true)
	if d := l.Admit(ctx, key, limits); !d.Allowed || d.Remaining != 100 {
		t.Fatalf("Redis down: want this replica's own window, fresh: %+v", d)
	}
	l.Spend(ctx, key, limits, 100)
	if d := l.Admit(ctx, key, limits); d.Allowed {
		t.Fatalf("Redis down: this replica's window must hold: %+v", d)
	}
	p.setDown(false)
	c.advance(redisrate.RetryEvery)
	if d := l.Admit(ctx, key, limits); !d.Allowed || d.Remaining != 60 {
		t.Fatalf("Redis back: want its window, 40 tokens spent: %+v", d)
	}
}
