package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/switchboard-ai/switchboard/domain"
)

func TestWriteError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		err    error
		status int
		reason string
		retry  string
	}{
		{"classified", domain.Invalid("model", "is required"), 400, "invalid_request", ""},
		{"timeout kind", domain.E(domain.KindTimeout, "upstream_timeout", "slow"), 524, "upstream_timeout", ""},
		{"overloaded kind", domain.E(domain.KindOverloaded, "upstream_overloaded", "busy"), 529, "upstream_overloaded", ""},
		{"retry after rounds up", &domain.Error{Kind: domain.KindRateLimited, Code: "rate_limited", Msg: "m", RetryAfter: 1500 * time.Millisecond}, 429, "rate_limited", "2"},
		{"unavailable kind, wrapped", fmt.Errorf("look up key: %w", domain.E(domain.KindUnavailable, "service_unavailable", "down")), 503, "service_unavailable", ""},
		{"anything else", errors.New("boom"), 500, "internal_error", ""},
		{"a driver error the store did not classify", fmt.Errorf("x: %w", io.ErrUnexpectedEOF), 500, "internal_error", ""},
	}
	gin.SetMode(gin.TestMode)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			c, _ := gin.CreateTestContext(w)
			c.Request = httptest.NewRequest(http.MethodGet, "/", nil)
			writeError(c, tt.err)
			var body errorEnvelope
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
				t.Fatal(err)
			}
			if w.Code != tt.status || body.Error.Code != tt.status || body.Error.Metadata["reason"] != tt.reason ||
				w.Header().Get("Retry-After") != tt.retry {
				t.Fatalf("%d %+v Retry-After %q", w.Code, body, w.Header().Get("Retry-After"))
			}
			if tt.status == 500 && body.Error.Message != "internal server error" {
				t.Fatalf("an internal error's cause reached the caller: %q", body.Error.Message)
			}
		})
	}
}
