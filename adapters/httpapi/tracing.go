package httpapi

import (
	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Tracing is OpenTelemetry tracing: a server span per request, continuing the caller's W3C traceparent. A nil
// Provider is tracing off.
type Tracing struct {
	Provider   trace.TracerProvider
	Propagator propagation.TextMapPropagator
	// TrustState keeps a caller's tracestate (W3C) on the request's span, which exports it; otherwise the span
	// continues the caller's trace without it: the caller's text reaches the trace backend only when the
	// operator trusts its callers' trace context.
	TrustState bool
}

// traceRequests starts each request's server span, named by its route pattern, with the request and generation
// ids as attributes; never a header, a body or a query string (keys and prompts stay out of traces).
func traceRequests(t Tracing) gin.HandlerFunc {
	tracer := t.Provider.Tracer("github.com/switchboard-ai/switchboard/adapters/httpapi")
	return func(c *gin.Context) {
		ctx := t.Propagator.Extract(c.Request.Context(), propagation.HeaderCarrier(c.Request.Header))
		if sc := trace.SpanContextFromContext(ctx); !t.TrustState && sc.TraceState().Len() > 0 {
			ctx = trace.ContextWithRemoteSpanContext(ctx, sc.WithTraceState(trace.TraceState{}))
		}
		route := c.FullPath()
		name := c.Request.Method + " " + route
		if route == "" {
			name = c.Request.Method
		}
		ctx, span := tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
			attribute.String("http.request.method", knownMethod(c.Request.Method)), attribute.String("http.route", route)))
		defer span.End()
		c.Request = c.Request.WithContext(ctx)
		c.Next()
		status := c.Writer.Status()
		span.SetAttributes(attribute.Int("http.response.status_code", status),
			attribute.String("switchboard.request_id", RequestID(c.Request.Context())))
		if id := c.Writer.Header().Get("X-Generation-Id"); id != "" {
			span.SetAttributes(attribute.String("switchboard.generation_id", id))
		}
		if status >= 500 {
			span.SetStatus(codes.Error, "")
		}
	}
}
