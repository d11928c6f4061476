package wire

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"

	"github.com/switchboard-ai/switchboard/adapters/httpapi"
	"github.com/switchboard-ai/switchboard/app"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/ports"
)

// TracingConfig turns OpenTelemetry tracing on (tracing.enabled). The exporter is OTLP over HTTP, configured by
// the standard environment variables (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS, ...), as are the
// sampler (OTEL_TRACES_SAMPLER, see sampler) and the resource (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES).
type TracingConfig struct {
	Enabled bool
	// TrustCallerSampling (tracing.trust_caller_sampling) lets the sampled flag of a caller's traceparent decide
	// whether its request is traced, as OpenTelemetry's parent-based samplers do.
	TrustCallerSampling bool
	// TrustCallerState (tracing.trust_caller_state) keeps a caller's tracestate on the spans its request makes,
	// and so exports it: by default it is dropped, as a caller's text the operator has not chosen to trust.
	TrustCallerState bool
	// Sampler and SamplerArg are OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG, read with the configuration.
	Sampler, SamplerArg string
	// Exporter, when set, receives the spans instead of the OTLP exporter: tests pass an in-memory one.
	Exporter sdktrace.SpanExporter
}

// sampler is the operator's sampler, OTEL_TRACES_SAMPLER with its argument as the SDK reads them (unset: the SDK's
// parentbased_always_on). Unless TrustCallerSampling, a request under a caller's traceparent is decided as the
// first span of a trace of the gateway's own would be (ownDecision), whatever the caller's sampled flag says: with
// the flag trusted, any caller could have all of its requests traced past the operator's ratio, a load on the
// trace backend that is the operator's to choose. The span still continues the caller's trace, and spans under
// the gateway's own follow them, as with the parent-based samplers.
func (c TracingConfig) sampler() (sdktrace.Sampler, error) {
	name := strings.ToLower(strings.TrimSpace(c.Sampler))
	if name == "" {
		name = "parentbased_always_on"
	}
	kind, parentBased := strings.CutPrefix(name, "parentbased_")
	var root sdktrace.Sampler
	switch kind {
	case "always_on":
		root = sdktrace.AlwaysSample()
	case "always_off":
		root = sdktrace.NeverSample()
	case "traceidratio":
		ratio := 1.0
		if arg := strings.TrimSpace(c.SamplerArg); arg != "" {
			var err error
			if ratio, err = strconv.ParseFloat(arg, 64); err != nil || !(ratio >= 0 && ratio <= 1) {
				return nil, &ConfigError{Field: "OTEL_TRACES_SAMPLER_ARG", Msg: "must be a ratio from 0 to 1, as 0.1"}
			}
		}
		root = sdktrace.TraceIDRatioBased(ratio)
	default:
		return nil, &ConfigError{Field: "OTEL_TRACES_SAMPLER", Msg: "must be one of always_on, always_off, traceidratio, " +
			"parentbased_always_on, parentbased_always_off, parentbased_traceidratio"}
	}
	switch {
	case !c.TrustCallerSampling:
		own := ownDecision{root}
		return sdktrace.ParentBased(root, sdktrace.WithRemoteParentSampled(own), sdktrace.WithRemoteParentNotSampled(own)), nil
	case parentBased:
		return sdktrace.ParentBased(root), nil
	}
	return root, nil
}

// ownDecision decides a span under a caller's span as root decides the first span of a trace of the gateway's
// own: on a trace id of its own drawing, since a ratio decides by the trace id, and the caller's is the caller's
// choice (one whose last eight bytes are zero passes every ratio but 0). The span keeps the caller's trace id (and its
// tracestate when TrustCallerState).
type ownDecision struct{ root sdktrace.Sampler }

func (o ownDecision) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	binary.BigEndian.PutUint64(p.TraceID[:8], rand.Uint64())
	binary.BigEndian.PutUint64(p.TraceID[8:], rand.Uint64())
	return o.root.ShouldSample(p)
}

func (o ownDecision) Description() string { return "OwnDecision{" + o.root.Description() + "}" }

// flushTimeout bounds the cleanup's export of what is buffered: a collector that does not answer would otherwise
// hold the process's exit, after the drain, for the processor's export timeout (30 s).
const flushTimeout = 5 * time.Second

// newTracing builds the tracer provider; its cleanup exports what is buffered. Off, it is a zero Tracing. The
// exporter's failures (a collector unreachable) are logged through log, as warnings (OpenTelemetry's error handler
// is global: in a process of several gateways, as in tests, the last one's logger).
func newTracing(ctx context.Context, cfg TracingConfig, log *slog.Logger) (httpapi.Tracing, func(), error) {
	if !cfg.Enabled {
		return httpapi.Tracing{}, func() {}, nil
	}
	sampler, err := cfg.sampler()
	if err != nil {
		return httpapi.Tracing{}, nil, fmt.Errorf("tracing: %w", err)
	}
	exp := cfg.Exporter
	if exp == nil {
		if exp, err = otlptracehttp.New(ctx); err != nil {
			return httpapi.Tracing{}, nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
		}
	}
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", "switchboard")), resource.WithFromEnv(),
		resource.WithTelemetrySDK())
	if err != nil {
		return httpapi.Tracing{}, nil, fmt.Errorf("tracing: resource: %w", err)
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("tracing", "err", err) }))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res), sdktrace.WithSampler(sampler))
	t := httpapi.Tracing{Provider: tp,
		Propagator: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
		TrustState: cfg.TrustCallerState}
	return t, func() {
		flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
		defer cancel()
		_ = tp.Shutdown(flush)
	}, nil
}

// traceUpstream gives every upstream call a client span. The trace context is not sent to the providers: they
// are third parties.
func traceUpstream(client *http.Client, t httpapi.Tracing) {
	if t.Provider == nil {
		return
	}
	client.Transport = otelhttp.NewTransport(urlWithoutQuery{client.Transport}, otelhttp.WithTracerProvider(t.Provider),
		otelhttp.WithPropagators(propagation.NewCompositeTextMapPropagator()),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return "upstream " + r.Method + " " + r.URL.Host }))
}

// urlWithoutQuery runs under otelhttp's span, and sets its url.full (otelhttp's is the whole URL) to the URL
// without its query: a provider's download may redirect to a signed URL whose query is the credential.
type urlWithoutQuery struct{ http.RoundTripper }

func (t urlWithoutQuery) RoundTrip(r *http.Request) (*http.Response, error) {
	u := *r.URL
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	trace.SpanFromContext(r.Context()).SetAttributes(attribute.String("url.full", u.String()))
	return t.RoundTripper.RoundTrip(r)
}

// traceDB gives every database statement a client span named by its operation and table, with the statement's
// text but never its arguments (they may be prompts or key hashes).
func traceDB(db *gorm.DB, t httpapi.Tracing) error {
	if t.Provider == nil {
		return nil
	}
	tracer := t.Provider.Tracer("github.com/switchboard-ai/switchboard/adapters/gormstore")
	const spanKey = "switchboard:span"
	before := func(op string) func(*gorm.DB) {
		return func(tx *gorm.DB) {
			ctx, span := tracer.Start(tx.Statement.Context, strings.TrimSpace("db "+op+" "+tx.Statement.Table), trace.WithSpanKind(trace.SpanKindClient),
				trace.WithAttributes(attribute.String("db.system.name", tx.Dialector.Name()), attribute.String("db.operation.name", op)))
			tx.Statement.Context = ctx
			tx.InstanceSet(spanKey, span)
		}
	}
	after := func(tx *gorm.DB) {
		v, ok := tx.InstanceGet(spanKey)
		if !ok {
			return
		}
		span := v.(trace.Span)
		span.SetAttributes(attribute.String("db.query.text", tx.Statement.SQL.String()))
		if tx.Error != nil && tx.Error != gorm.ErrRecordNotFound { //nolint:errorlint // gorm sets the sentinel itself
			span.SetStatus(codes.Error, tx.Error.Error())
		}
		span.End()
	}
	cb := db.Callback()
	for _, err := range []error{
		cb.Create().Before("*").Register("switchboard:trace_before_create", before("create")),
		cb.Create().After("*").Register("switchboard:trace_after_create", after),
		cb.Query().Before("*").Register("switchboard:trace_before_query", before("query")),
		cb.Query().After("*").Register("switchboard:trace_after_query", after),
		cb.Update().Before("*").Register("switchboard:trace_before_update", before("update")),
		cb.Update().After("*").Register("switchboard:trace_after_update", after),
		cb.Delete().Before("*").Register("switchboard:trace_before_delete", before("delete")),
		cb.Delete().After("*").Register("switchboard:trace_after_delete", after),
		cb.Row().Before("*").Register("switchboard:trace_before_row", before("row")),
		cb.Row().After("*").Register("switchboard:trace_after_row", after),
		cb.Raw().Before("*").Register("switchboard:trace_before_raw", before("raw")),
		cb.Raw().After("*").Register("switchboard:trace_after_raw", after),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// recorderPort is the recorder the pipeline writes to: with tracing on, each call's record gets a span in the
// call's own trace (the batch that later writes it to the database is the writer's own trace).
func recorderPort(r *app.Recorder, t httpapi.Tracing) ports.GenerationRecorder {
	if t.Provider == nil {
		return r
	}
	return tracedRecorder{Recorder: r, tracer: t.Provider.Tracer("github.com/switchboard-ai/switchboard/app")}
}

type tracedRecorder struct {
	*app.Recorder
	tracer trace.Tracer
}

func (t tracedRecorder) Record(ctx context.Context, e generation.Entry) {
	ctx, span := t.tracer.Start(ctx, "generation record",
		trace.WithAttributes(attribute.String("switchboard.generation_id", e.Record.ID)))
	defer span.End()
	t.Recorder.Record(ctx, e)
}
