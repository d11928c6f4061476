//go:build wireinject

package wire

import (
	"context"
	"log/slog"

	"github.com/google/wire"

	"github.com/switchboard-ai/switchboard/adapters/gormstore"
	"github.com/switchboard-ai/switchboard/app"
)

// InitializeGateway assembles the HTTP server with every module. env is the clock and id source (app.SystemEnv
// in production).
func InitializeGateway(ctx context.Context, cfg Config, log *slog.Logger, env app.Env) (*Gateway, func(), error) {
	panic(wire.Build(configSet, storeSet, changeSet, cacheSet, accountSet, generationSet, presetSet, guardrailSet,
		providerSet, creditHTTPSet, billingSet, rateLimitSet, inferenceSet, speechSet, chatSet, embeddingsSet, videoSet, workerSet, metricsSet,
		tracingSet, httpSet, wire.Struct(new(Gateway), "*")))
}

// initializeAdmin assembles what the administrative subcommands need: a database that exists and is migrated
// already (they never create one), and the use cases.
func initializeAdmin(ctx context.Context, cfg Config, log *slog.Logger, env app.Env) (*Admin, func(), error) {
	panic(wire.Build(configSet, gormstore.OpenExisting, changeSet, noMetrics, accountSet, creditSet, newAdmin))
}
