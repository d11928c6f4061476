package httpapi

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/switchboard-ai/switchboard/domain"
)

// errorEnvelope is the spec's error body: error.code always equals the HTTP status.
type errorEnvelope struct {
	Error errorObject `json:"error"`
}

type errorObject struct {
	Code     int            `json:"code"`
	Message  string         `json:"message"`
	Metadata map[string]any `json:"metadata"`
}

// writeError answers err in the envelope. Unclassified errors are a 500 whose cause is logged, never sent.
func writeError(c *gin.Context, err error) {
	de := &domain.Error{Kind: domain.KindInternal, Code: "internal_error", Msg: "internal server error"}
	errors.As(err, &de)
	status := de.Kind.Status()
	ctx, log := c.Request.Context(), loggerOf(c)
	switch {
	case c.Writer.Written():
		// Headers are gone: the only honest signal left is to break the connection.
		log.WarnContext(ctx, "response aborted mid-stream", "route", c.FullPath(), "err", err)
		panic(http.ErrAbortHandler)
	case status >= 500 && !de.Logged:
		log.ErrorContext(ctx, "request failed", "route", c.FullPath(), "status", status, "reason", de.Code, "err", err)
	default:
		log.DebugContext(ctx, "request refused", "route", c.FullPath(), "status", status, "reason", de.Code, "err", err)
	}
	respond(c, status, de)
}

// respond writes de in the envelope with the given status.
func respond(c *gin.Context, status int, de *domain.Error) {
	if de.RetryAfter > 0 {
		c.Header("Retry-After", strconv.FormatInt(int64((de.RetryAfter+999_999_999)/1_000_000_000), 10))
	}
	meta := make(map[string]any, len(de.Meta)+1)
	for k, v := range de.Meta {
		meta[k] = v
	}
	meta["reason"] = de.Code
	if r := recordOf(c.Request.Context()); r != nil && r.anthropic {
		c.AbortWithStatusJSON(status, toAnthropicError(status, de.Msg, meta))
		return
	}
	c.AbortWithStatusJSON(status, errorEnvelope{Error: errorObject{Code: status, Message: de.Msg, Metadata: meta}})
}
