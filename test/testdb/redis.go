package testdb

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-ai/switchboard/test/short"
)

// DefaultRedisURL is the local Redis that `.ci/run` starts when it is down.
const DefaultRedisURL = "redis://127.0.0.1:6379/0"

// RedisURL returns TEST_REDIS_URL (DefaultRedisURL when unset) after checking that Redis answers there. A test
// that needs Redis fails when it does not: it never skips. Tests share the server and keep apart by key names
// (API key hashes are random).
func RedisURL(t testing.TB) string {
	t.Helper()
	short.Skip(t, "Redis")
	u := os.Getenv("TEST_REDIS_URL")
	if u == "" {
		u = DefaultRedisURL
	}
	opts, err := redis.ParseURL(u)
	if err != nil {
		t.Fatalf("TEST_REDIS_URL: %v", err)
	}
	c := redis.NewClient(opts)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("no Redis for the tests at %s: %v\nstart one (redis-server --daemonize yes, as .ci/run does) or set TEST_REDIS_URL", opts.Addr, err)
	}
	return u
}
