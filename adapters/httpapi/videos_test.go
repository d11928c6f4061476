package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/domain/video"
	"github.com/switchboard-ai/switchboard/ports"
)

// rangeVideos is a video service whose every job has one output: Content keeps the range it was asked for and
// answers with a byte of it.
type rangeVideos struct {
	asked []string
}

func (v *rangeVideos) Content(_ context.Context, _ account.Principal, _ string, _ int, byteRange string, sink ports.VideoSink) error {
	v.asked = append(v.asked, byteRange)
	status := http.StatusOK
	if byteRange != "" {
		status = http.StatusPartialContent
	}
	sink.Start(ports.VideoContent{Status: status, ContentType: "video/mp4", ContentLength: 1})
	if err := sink.Write([]byte{0}); err != nil {
		return err
	}
	return sink.Flush()
}

func (*rangeVideos) Create(context.Context, account.Principal, video.Request, generation.Caller) (video.Job, error) {
	return video.Job{}, nil
}
func (*rangeVideos) Get(context.Context, account.Principal, string) (video.Job, error) {
	return video.Job{}, nil
}
func (*rangeVideos) List(context.Context, account.Principal, ports.VideoFilter) (ports.VideoPage, error) {
	return ports.VideoPage{}, nil
}
func (*rangeVideos) Models() []ports.VideoModel { return nil }

// TestVideoContentRange: the Range header of a download reaches the provider as every provider reads it (the unit
// in lower case, no whitespace, numbers past int64 at its largest, zero-length suffixes left out), or not at all
// when RFC 9110 calls it invalid (the whole content, 200); one that selects nothing whatever the file's length
// (zero-length suffixes only), or longer than 256 bytes, is a 416 in the envelope, and no provider is asked.
func TestVideoContentRange(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	videos := &rangeVideos{}
	s := NewServer(cfg, slog.New(slog.DiscardHandler), nil, stubAuth{}, stubLimiter{}, 0, TokenLimits{}, ports.NoMetrics{},
		MetricsEndpoint{}, Tracing{}, Handlers{Videos: NewVideosHandler(videos, cfg)})
	const huge = "99999999999999999999999"
	for _, tt := range []struct {
		header  string
		status  int
		forward string // the range the provider is asked for, when it is asked
	}{
		{"bytes=0-499", http.StatusPartialContent, "bytes=0-499"},
		{"bytes=500-", http.StatusPartialContent, "bytes=500-"},
		{"bytes=-500", http.StatusPartialContent, "bytes=-500"},
		{"bytes=3-3", http.StatusPartialContent, "bytes=3-3"},
		{"bytes=0-0,-1", http.StatusPartialContent, "bytes=0-0,-1"},
		{"bytes=0-1 , 5-6,", http.StatusPartialContent, "bytes=0-1,5-6"},
		{" BYTES = 0-1", http.StatusPartialContent, "bytes=0-1"},
		{"Bytes=\t0-1\t", http.StatusPartialContent, "bytes=0-1"},
		{"bytes=0099-0100", http.StatusPartialContent, "bytes=99-100"},
		{"bytes=0-" + huge, http.StatusPartialContent, "bytes=0-9223372036854775807"},
		{"bytes=" + huge + "-", http.StatusPartialContent, "bytes=9223372036854775807-"},
		{"bytes=-" + huge, http.StatusPartialContent, "bytes=-9223372036854775807"},
		{"bytes=9223372036854775807-9223372036854775808", http.StatusPartialContent, "bytes=9223372036854775807-9223372036854775807"},
		{"bytes=-0,0-1", http.StatusPartialContent, "bytes=0-1"},
		{"bytes=-00,-5", http.StatusPartialContent, "bytes=-5"},
		{"bytes=-0", http.StatusRequestedRangeNotSatisfiable, ""},
		{"bytes=-000, -0", http.StatusRequestedRangeNotSatisfiable, ""},
		{"bytes=0-" + strings.Repeat("1", 250), http.StatusRequestedRangeNotSatisfiable, ""},
		{"bytes=9-3", http.StatusOK, ""},
		{"bytes=0-1,9-3", http.StatusOK, ""},
		{"bytes=100-099", http.StatusOK, ""},
		{"bytes=" + huge + "-1", http.StatusOK, ""},
		{"bytes=-", http.StatusOK, ""},
		{"bytes=", http.StatusOK, ""},
		{"bytes=,", http.StatusOK, ""},
		{"bytes=a-b", http.StatusOK, ""},
		{"bytes=1-2-3", http.StatusOK, ""},
		{"bytes=+1-2", http.StatusOK, ""},
		{"bytes=1", http.StatusOK, ""},
		{"items=0-1", http.StatusOK, ""},
		{"0-1", http.StatusOK, ""},
		{"", http.StatusOK, ""},
	} {
		videos.asked = nil
		req := httptest.NewRequest(http.MethodGet, "/api/v1/videos/gen-vid-1-a/content", nil)
		req.Header.Set("Authorization", "Bearer sk-test")
		if tt.header != "" {
			req.Header.Set("Range", tt.header)
		}
		w := httptest.NewRecorder()
		s.engine.ServeHTTP(w, req)
		body, _ := io.ReadAll(w.Body)
		if w.Code != tt.status {
			t.Errorf("Range %q: %d %s, want %d", tt.header, w.Code, body, tt.status)
			continue
		}
		if tt.status == http.StatusRequestedRangeNotSatisfiable {
			if len(videos.asked) != 0 || !strings.HasPrefix(string(body), `{"error":{"code":416,`) {
				t.Errorf("Range %q: the provider was asked for %q, and the answer is %s", tt.header, videos.asked, body)
			}
			continue
		}
		if len(videos.asked) != 1 || videos.asked[0] != tt.forward {
			t.Errorf("Range %q: the provider was asked for %q, want %q", tt.header, videos.asked, tt.forward)
		}
	}
}
