package wire

import (
	"context"
	"log/slog"

	"github.com/google/wire"
	"gorm.io/gorm"

	"github.com/switchboard-ai/switchboard/adapters/gormstore"
	"github.com/switchboard-ai/switchboard/adapters/httpapi"
	"github.com/switchboard-ai/switchboard/app"
	"github.com/switchboard-ai/switchboard/ports"
)

var configSet = wire.NewSet(
	wire.FieldsOf(new(Config), "Server", "Database", "Limits"),
)

// openDB connects and migrates: every command works on a current schema.
func openDB(ctx context.Context, cfg gormstore.Config, log *slog.Logger) (*gorm.DB, func(), error) {
	db, cleanup, err := gormstore.Open(cfg, log)
	if err != nil {
		return nil, nil, err
	}
	if err := gormstore.Migrate(ctx, db); err != nil {
		cleanup()
		return nil, nil, err
	}
	return db, cleanup, nil
}

var storeSet = wire.NewSet(
	openDB,
	gormstore.NewHealth, wire.Bind(new(httpapi.Readiness), new(*gormstore.Health)),
)

var accountSet = wire.NewSet(
	gormstore.NewAccounts,
	wire.Bind(new(ports.Directory), new(*gormstore.Accounts)),
	wire.Bind(new(ports.KeyStore), new(*gormstore.Accounts)),
	wire.Bind(new(ports.UsageStore), new(*gormstore.Accounts)),
	wire.Bind(new(ports.MemberStore), new(*gormstore.Accounts)),
	app.NewAccounts,
	wire.Bind(new(ports.Keys), new(*app.Accounts)),
	wire.Bind(new(ports.Members), new(*app.Accounts)),
	wire.Bind(new(ports.Authenticator), new(*app.Accounts)),
	defaultRateLimit,
	httpapi.NewKeysHandler,
	httpapi.NewMembersHandler,
)

func defaultRateLimit(l LimitsConfig) httpapi.DefaultRateLimit {
	return httpapi.DefaultRateLimit(l.RequestsPerMinute)
}

var httpSet = wire.NewSet(
	wire.Struct(new(httpapi.Handlers), "*"),
	httpapi.NewServer,
)

// Gateway is the running service: the HTTP server and what serve needs beside it.
type Gateway struct {
	Server   *httpapi.Server
	Accounts *app.Accounts
}

// Admin is what the administrative subcommands use.
type Admin struct {
	Accounts *app.Accounts
}
