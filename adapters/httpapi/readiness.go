package httpapi

import (
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/switchboard-ai/switchboard/domain"
)

// ErrNotReady is a Readiness's answer when the database is unreachable or its schema behind this binary's.
var ErrNotReady = &domain.Error{Kind: domain.KindUnavailable, Code: "not_ready", Logged: true, RetryAfter: 2 * time.Second,
	Msg: "not ready: the database is unreachable or not migrated"}

// readyz answers GET /readyz: 200 with the details when inference calls would be served, else a 503 that says why —
// the refusal calls get (spool_full, spool_unavailable), or ErrNotReady (the database) — with the details in its
// metadata, so that a load balancer stops sending calls as soon as the gateway would refuse them. A load balancer
// asks every few seconds: each 503 is logged at debug level, and the episode once, when it starts (with its
// reason) and when it ends.
func readyz(ready Readiness, log *slog.Logger) gin.HandlerFunc {
	var mu sync.Mutex
	down := "" // the reason of the episode under way
	episode := func(c *gin.Context, reason string, err error) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case reason == down:
		case reason == "":
			log.InfoContext(c.Request.Context(), "ready again: inference calls are served", "was", down)
		default:
			log.WarnContext(c.Request.Context(), "not ready: inference calls would be refused, and /readyz answers 503",
				"reason", reason, "err", err)
		}
		down = reason
	}
	return func(c *gin.Context) {
		details := ready.Details()
		err := ready.Ready(c.Request.Context())
		if err == nil {
			episode(c, "", nil)
			body := gin.H{"status": "ready"}
			maps.Copy(body, details)
			c.JSON(http.StatusOK, body)
			return
		}
		de := &domain.Error{}
		if !errors.As(err, &de) || de.Kind != domain.KindUnavailable {
			de = ErrNotReady.Wrap(err)
		}
		episode(c, de.Code, err)
		out := *de
		out.Logged = true
		for k, v := range details {
			out = *out.With(k, v)
		}
		writeError(c, &out)
	}
}
