package video_test

import (
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/domain/video"
)

// TestNewJobID: a job id keeps at most 20 characters of the random value, without its hyphens, whatever the
// length of what the id generator returns.
func TestNewJobID(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	for _, tc := range []struct{ random, want string }{
		{"0f915ba8-11e3-40ac-a9c8-a5d1e01ad73e", "gen-vid-1700000000-0f915ba811e340aca9c8"},
		{"0123456789abcdefghij", "gen-vid-1700000000-0123456789abcdefghij"},
		{"short", "gen-vid-1700000000-short"},
		{"a-b", "gen-vid-1700000000-ab"},
		{"", "gen-vid-1700000000-"},
	} {
		if got := video.NewJobID(now, tc.random); got != tc.want {
			t.Errorf("NewJobID(%q) = %q, want %q", tc.random, got, tc.want)
		}
	}
}
