package wire

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/wire"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/switchboard-ai/switchboard/adapters/console"
	"github.com/switchboard-ai/switchboard/adapters/gormstore"
	"github.com/switchboard-ai/switchboard/adapters/httpapi"
	"github.com/switchboard-ai/switchboard/adapters/pgnotify"
	"github.com/switchboard-ai/switchboard/adapters/prom"
	"github.com/switchboard-ai/switchboard/adapters/redisrate"
	"github.com/switchboard-ai/switchboard/adapters/spool"
	"github.com/switchboard-ai/switchboard/app"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/ports"
)

var configSet = wire.NewSet(
	wire.FieldsOf(new(Config), "Server", "Database", "Limits", "Generations", "Providers", "Catalog", "Credits", "Video", "Routing", "Redis", "Metrics", "Tracing"),
)

// openDB connects and migrates: every command works on a current schema.
func openDB(ctx context.Context, cfg gormstore.Config, log *slog.Logger, tracing httpapi.Tracing) (*gorm.DB, func(), error) {
	db, cleanup, err := gormstore.Open(ctx, cfg, log)
	if err != nil {
		return nil, nil, err
	}
	if err := gormstore.Migrate(ctx, db); err != nil {
		cleanup()
		return nil, nil, err
	}
	if err := traceDB(db, tracing); err != nil {
		cleanup()
		return nil, nil, err
	}
	return db, cleanup, nil
}

var storeSet = wire.NewSet(
	openDB,
	gormstore.NewHealth, newReadiness, wire.Bind(new(httpapi.Readiness), new(readiness)),
)

// changeSet tells every replica about changes to what they cache.
var changeSet = wire.NewSet(
	newChangeNotifier,
)

// newChangeNotifier tells the other replicas through the PostgreSQL database they share (LISTEN/NOTIFY); the
// embedded SQLite database means one process, with nobody else to tell.
func newChangeNotifier(db *gorm.DB, log *slog.Logger) ports.ChangeNotifier {
	if gormstore.Dialect(db) == gormstore.Postgres {
		return pgnotify.NewNotifier(db, log)
	}
	return app.OneProcess{}
}

var cacheSet = wire.NewSet(
	app.NewCaches,
	newChangeListener,
)

// changeListener is the worker that keeps this replica's caches listening for the other replicas' changes;
// without one (SQLite: one process) its Run is nil.
type changeListener app.Worker

// newChangeListener listens through the PostgreSQL database the replicas share.
func newChangeListener(db *gorm.DB, cfg gormstore.Config, caches *app.Caches, log *slog.Logger) (changeListener, error) {
	if gormstore.Dialect(db) != gormstore.Postgres {
		return changeListener{}, nil
	}
	l, err := pgnotify.NewListener(cfg.URL, caches, log)
	if err != nil {
		return changeListener{}, err
	}
	return changeListener{Name: "change listener", Run: l.Run}, nil
}

// readiness is whether inference calls would be served: the recorder accepts them (its spool is neither full nor
// refusing writes), and the database answers with a current schema; with the depth of the spool of records not
// yet in it.
type readiness struct {
	*gormstore.Health
	rec *app.Recorder
}

func newReadiness(h *gormstore.Health, rec *app.Recorder) readiness { return readiness{h, rec} }

// Ready asks the recorder first: it answers at once, and a spool that fills while the database is away must say so
// even while the database's check waits for its timeout.
func (r readiness) Ready(ctx context.Context) error {
	if err := r.rec.Accepting(); err != nil {
		return err
	}
	if err := r.Health.Ready(ctx); err != nil {
		return httpapi.ErrNotReady.Wrap(err)
	}
	return nil
}

func (r readiness) Details() map[string]any {
	st := r.rec.Stats()
	return map[string]any{"spool": map[string]any{"records": st.Records, "bytes": st.Bytes, "max_bytes": st.MaxBytes,
		"quarantined": st.Quarantined}}
}

var accountSet = wire.NewSet(
	gormstore.NewAccountStore,
	wire.Bind(new(ports.Directory), new(*gormstore.AccountStore)),
	wire.Bind(new(ports.KeyStore), new(*gormstore.AccountStore)),
	wire.Bind(new(ports.UsageStore), new(*gormstore.AccountStore)),
	wire.Bind(new(ports.MemberStore), new(*gormstore.AccountStore)),
	wire.Bind(new(ports.WorkspaceBudgetStore), new(*gormstore.AccountStore)),
	app.NewAccounts,
	wire.Bind(new(ports.WorkspaceBudgetSource), new(*app.Accounts)),
	wire.Bind(new(ports.KeyService), new(*app.Accounts)),
	wire.Bind(new(ports.MemberService), new(*app.Accounts)),
	wire.Bind(new(ports.Authenticator), new(*app.Accounts)),
	wire.Bind(new(ports.WorkspaceService), new(*app.Accounts)),
	defaultRateLimit,
	httpapi.NewKeysHandler,
	httpapi.NewMembersHandler,
	httpapi.NewWorkspacesHandler,
)

func defaultRateLimit(l LimitsConfig) httpapi.DefaultRateLimit {
	return httpapi.DefaultRateLimit(l.RequestsPerMinute)
}

var generationSet = wire.NewSet(
	gormstore.NewGenerationStore, wire.Bind(new(ports.GenerationStore), new(*gormstore.GenerationStore)),
	wire.Bind(new(ports.GenerationRetention), new(*gormstore.GenerationStore)),
	wire.Bind(new(ports.GenerationList), new(*gormstore.GenerationStore)),
	wire.Bind(new(ports.ActivityStore), new(*gormstore.GenerationStore)),
	wire.Bind(new(ports.FeedbackStore), new(*gormstore.GenerationStore)),
	newRecorder, recorderPort,
	newRetention, app.NewDays,
	app.NewGenerations, wire.Bind(new(ports.GenerationService), new(*app.Generations)),
	wire.Bind(new(ports.GenerationLister), new(*app.Generations)),
	wire.Bind(new(ports.FeedbackService), new(*app.Generations)),
	app.NewActivity, wire.Bind(new(ports.ActivityService), new(*app.Activity)),
	httpapi.NewGenerationsHandler, httpapi.NewActivityHandler,
)

// newRecorder opens the spool (replaying what an earlier run left in it); the recorder's writers are one of the
// workers (startWorkers), stopped before this cleanup closes the spool. SQLite takes one writer at a time (the
// store holds one connection), so there the recorder has one.
func newRecorder(db *gorm.DB, store ports.GenerationStore, log *slog.Logger, metrics ports.Metrics, cfg GenerationsConfig) (*app.Recorder, func(), error) {
	sp, err := spool.Open(spool.Config{Dir: cfg.SpoolDir, MaxBytes: cfg.SpoolMaxBytes, Sync: cfg.SpoolFsync,
		Valid: spooledRecord}, log)
	if err != nil {
		return nil, nil, err
	}
	if lost := sp.Stats().Quarantined; lost > 0 { // records damage on disk held: Open kept the bytes apart
		metrics.RecordsQuarantined(int(lost))
	}
	rc := app.DefaultRecorderConfig()
	rc.StoreContent = cfg.StoreContent
	if gormstore.Dialect(db) == gormstore.SQLite {
		rc.Writers = 1
	}
	return app.NewRecorder(store, sp, log, metrics, rc), func() {
		if err := sp.Close(); err != nil {
			log.Error("close spool", "err", err)
		}
	}, nil
}

// newRetention purges old generation contents and records (none when their retentions are 0); the workers run it.
func newRetention(store ports.GenerationRetention, log *slog.Logger, cfg GenerationsConfig, env app.Env) *app.Retention {
	return app.NewRetention(store, log, cfg.RetentionDays, cfg.ContentRetentionDays, env)
}

var presetSet = wire.NewSet(
	gormstore.NewPresetStore, wire.Bind(new(ports.PresetStore), new(*gormstore.PresetStore)),
	app.NewPresets, wire.Bind(new(ports.PresetService), new(*app.Presets)),
	httpapi.NewPresetsHandler,
)

var guardrailSet = wire.NewSet(
	gormstore.NewGuardrailStore,
	wire.Bind(new(ports.GuardrailStore), new(*gormstore.GuardrailStore)),
	wire.Bind(new(ports.AssignmentStore), new(*gormstore.GuardrailStore)),
	wire.Bind(new(ports.BudgetStore), new(*gormstore.GuardrailStore)),
	app.NewGuardrails,
	wire.Bind(new(ports.GuardrailService), new(*app.Guardrails)),
	wire.Bind(new(ports.GuardrailEnforcer), new(*app.Guardrails)),
	httpapi.NewGuardrailsHandler,
)

// providerSet builds a client for every configured upstream account.
var providerSet = wire.NewSet(
	newProviders,
)

var creditSet = wire.NewSet(
	gormstore.NewCreditStore, wire.Bind(new(ports.CreditStore), new(*gormstore.CreditStore)),
	app.NewCredits, wire.Bind(new(ports.CreditService), new(*app.Credits)),
)

var creditHTTPSet = wire.NewSet(
	creditSet,
	httpapi.NewCreditsHandler,
)

var billingSet = wire.NewSet(
	newBilling,
)

func newBilling(usage ports.UsageStore, budgets ports.WorkspaceBudgetSource, holds ports.WorkspaceBudgetStore,
	credits ports.CreditStore, guard ports.GuardrailEnforcer, cfg CreditsConfig, env app.Env) *app.Billing {
	return app.NewBilling(usage, budgets, holds, credits, guard, app.CreditsEnabled(cfg.Enabled), env)
}

var rateLimitSet = wire.NewSet(
	newRedis, newRateLimiter, newTokenLimiter, tokenDefaults, httpTokenLimits,
)

// sharedRedis is where replicas share their rate and token limits: nil without redis.url.
type sharedRedis struct{ limiter *redisrate.Limiter }

// newRedis connects to redis.url, when set: the rate limiter there, with this replica's own as its fallback.
func newRedis(ctx context.Context, cfg RedisConfig, env app.Env, log *slog.Logger) (sharedRedis, func(), error) {
	if cfg.URL == "" {
		log.Info("rate and token limits are per replica: without redis.url (REDIS_URL) each gateway process admits a key's full limits")
		return sharedRedis{}, func() {}, nil
	}
	opts, err := redisrate.Options(cfg.URL)
	if err != nil {
		return sharedRedis{}, nil, fmt.Errorf("redis.url: %w", err)
	}
	redis.SetLogger(redisrate.NewLogger(log)) // the process's: go-redis's lines in the configured format
	client := redis.NewClient(opts)
	if err := redisrate.Ping(ctx, client); err != nil {
		log.Warn("Redis is unreachable at startup: rate and token limits hold per replica until it answers", "addr", opts.Addr, "err", err)
	} else {
		log.Info("rate and token limits are shared by every replica through Redis", "addr", opts.Addr)
	}
	return sharedRedis{redisrate.New(client, app.NewLocalRateLimiter(env), env.Now, log)}, func() { _ = client.Close() }, nil
}

// newRateLimiter shares the limits of every replica through Redis when redis.url is set; without it, each
// replica keeps its own (and says so at startup).
func newRateLimiter(r sharedRedis, env app.Env) ports.RateLimiter {
	if r.limiter == nil {
		return app.NewLocalRateLimiter(env)
	}
	return r.limiter
}

// newTokenLimiter shares the token windows of every replica through Redis, as the rate limits.
func newTokenLimiter(r sharedRedis, env app.Env) ports.TokenLimiter {
	local := app.NewLocalTokenLimiter(env)
	if r.limiter == nil {
		return local
	}
	return redisrate.NewTokens(r.limiter, local)
}

func tokenDefaults(l LimitsConfig) app.DefaultTokenLimits { return l.Tokens }

// httpTokenLimits are what the HTTP layer admits token-metered calls by.
func httpTokenLimits(l ports.TokenLimiter, def app.DefaultTokenLimits) httpapi.TokenLimits {
	return httpapi.TokenLimits{Limiter: l, Defaults: account.TokenLimits(def)}
}

// inferenceSet is the pipeline every inference call goes through, with its router and its token meter.
var inferenceSet = wire.NewSet(
	app.NewInference, newRouter, wire.Bind(new(ports.EndpointHealth), new(*app.Router)), app.NewTokenMeter,
)

// newRouter routes to the catalog's endpoints through the providers' accounts, with the configured breaker.
func newRouter(c *catalog.Catalog, providers []ProviderConfig, cfg app.HealthConfig, env app.Env) *app.Router {
	return app.NewRouter(c, providerAccounts(providers), cfg, env)
}

var speechSet = wire.NewSet(
	app.NewSpeech, wire.Bind(new(ports.SpeechService), new(*app.Speech)),
	httpapi.NewSpeechHandler,
)

var embeddingsSet = wire.NewSet(
	app.NewEmbeddings, wire.Bind(new(ports.EmbeddingService), new(*app.Embeddings)),
	httpapi.NewEmbeddingsHandler,
)

var chatSet = wire.NewSet(
	newChat, wire.Bind(new(ports.ChatService), new(*app.Chat)),
	httpapi.NewChatHandler, httpapi.NewResponsesHandler,
)

// newChat holds a request laid over a preset to the bound on a body that the server holds the caller's own to,
// and answers to the limits on what an upstream's answer may make the gateway hold.
func newChat(inference *app.Inference, providers ports.Providers, presets *app.Presets, env app.Env, server httpapi.Config,
	limits LimitsConfig, log *slog.Logger, metrics ports.Metrics) *app.Chat {
	return app.NewChat(inference, providers, presets, env, server.MaxBodyBytes,
		app.ChatLimits{MaxAnswerBytes: limits.MaxAnswerBytes, AnswerTimeout: limits.AnswerTimeout}, log, metrics)
}

var videoSet = wire.NewSet(
	gormstore.NewVideoStore, wire.Bind(new(ports.VideoStore), new(*gormstore.VideoStore)),
	app.NewVideos, wire.Bind(new(ports.VideoService), new(*app.Videos)),
	httpapi.NewVideosHandler,
)

// startWorkers is the one place the gateway's background work starts; its cleanup stops it, last started
// first, before the modules the workers use are closed. Serve runs it after the HTTP server has stopped. The
// recorder's writer starts first so that it stops last, writing what the others recorded.
func startWorkers(rec *app.Recorder, changes changeListener, days *app.Days, retention *app.Retention, videos *app.Videos,
	log *slog.Logger) (*app.Workers, func()) {
	ws := []app.Worker{rec.Worker()}
	if changes.Run != nil {
		ws = append(ws, app.Worker(changes))
	}
	ws = append(ws, days.Worker(time.Hour), retention.Worker(time.Hour), videos.Worker())
	w := app.StartWorkers(log, ws...)
	return w, w.Stop
}

var workerSet = wire.NewSet(startWorkers)

// metricsSet is Prometheus metrics (adapters/prom), or none when metrics.enabled is false.
var metricsSet = wire.NewSet(
	newMetrics, wire.FieldsOf(new(metrics), "Port", "Endpoint"),
)

type metrics struct {
	Port     ports.Metrics
	Endpoint httpapi.MetricsEndpoint
}

// newMetrics serves the metrics the gateway reports, and each endpoint's health read at each scrape.
func newMetrics(cfg MetricsConfig, health ports.EndpointHealth) metrics {
	if !cfg.Enabled {
		return metrics{Port: ports.NoMetrics{}}
	}
	m := prom.New()
	m.Endpoints(health)
	return metrics{Port: m, Endpoint: httpapi.MetricsEndpoint{Handler: m.Handler(), Addr: cfg.Addr}}
}

// tracingSet is OpenTelemetry tracing, off unless tracing.enabled.
var tracingSet = wire.NewSet(newTracing)

// noMetrics is for the administrative commands, which serve none.
var noMetrics = wire.InterfaceValue(new(ports.Metrics), ports.NoMetrics{})

// catalogSet lists the configured models and providers.
var catalogSet = wire.NewSet(
	app.NewCatalog, wire.Bind(new(ports.CatalogService), new(*app.Catalog)),
	httpapi.NewModelsHandler,
)

// consoleSet is the web console: its sessions, and the use cases its pages read and change.
var consoleSet = wire.NewSet(
	gormstore.NewSessionStore, wire.Bind(new(ports.ConsoleSessionStore), new(*gormstore.SessionStore)),
	app.NewConsole, wire.Bind(new(ports.ConsoleService), new(*app.Console)),
	newConsole,
)

func newConsole(c ports.ConsoleService, keys ports.KeyService, gens ports.GenerationService,
	activity ports.ActivityService, list ports.GenerationLister, ws ports.WorkspaceService, presets ports.PresetService,
	guardrails ports.GuardrailService, videos ports.VideoService, health ports.EndpointHealth, rec *app.Recorder,
	log *slog.Logger, env app.Env) httpapi.Console {
	return httpapi.Console{Handler: console.New(console.Deps{Console: c, Keys: keys, Generations: gens,
		Activity: activity, List: list, Workspaces: ws, Presets: presets, Guardrails: guardrails, Videos: videos,
		Health: health, Spool: rec}, log, env.Now)}
}

var httpSet = wire.NewSet(
	catalogSet,
	consoleSet,
	wire.Struct(new(httpapi.Handlers), "*"),
	httpapi.NewServer,
)

// Gateway is the running service: the HTTP server and what serve needs beside it.
type Gateway struct {
	Server   *httpapi.Server
	Accounts *app.Accounts
	Recorder *app.Recorder
	Workers  *app.Workers
	Billing  *app.Billing
	Credits  *app.Credits
	Videos   *app.Videos
	Caches   *app.Caches
}

// spooledRecord says whether a spool payload is one the recorder (app/recorder.go) appends: a probe (0, alone),
// or an entry, as JSON (1) or as generation.Entry's binary (2). The spool reads on after damage in a segment at
// the next frame that is one, so that bytes that only look like a frame are not taken for a record.
func spooledRecord(p []byte) bool {
	var e generation.Entry
	switch {
	case len(p) == 0:
		return false
	case p[0] == 0:
		return len(p) == 1
	case p[0] == 1:
		return json.Unmarshal(p[1:], &e) == nil
	case p[0] == 2:
		return e.UnmarshalBinary(p[1:]) == nil
	}
	return false
}
