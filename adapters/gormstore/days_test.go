package gormstore

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/test/short"
)

// onEachDialect runs test on a scratch database of each dialect, in parallel.
func onEachDialect(t *testing.T, test func(t *testing.T, db *gorm.DB)) {
	for _, d := range []struct {
		name string
		open func(*testing.T) *gorm.DB
	}{{"postgres", scratchPostgres}, {"sqlite", func(t *testing.T) *gorm.DB { return scratchSQLite(t) }}} {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			test(t, d.open(t))
		})
	}
}

// scratchPostgres is a migrated database of the test's own on TEST_DATABASE_URL's server, dropped when the test
// ends (this package's tests cannot use test/testdb, which imports it). Without a server the test fails.
func scratchPostgres(t *testing.T) *gorm.DB {
	t.Helper()
	short.Skip(t, "PostgreSQL")
	base := os.Getenv("TEST_DATABASE_URL")
	if base == "" {
		t.Fatal("TEST_DATABASE_URL is unset: these tests need a PostgreSQL server (make test sets it)")
	}
	ctx := context.Background()
	admin, closeAdmin, err := Open(ctx, Config{URL: base}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeAdmin)
	name := fmt.Sprintf("t_gormstore_%016x", rand.Uint64())
	if err := admin.Exec("CREATE DATABASE " + name).Error; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)") })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	db, cleanup, err := Open(ctx, Config{URL: u.String()}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	if err := Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestLookupReadsItsDays: a lookup by an id that carries a time is planned on the partitions of its day and the
// next (the record's created_at lies within MaxIDSkew of the id's time), not on the other days, nor on every day
// for an id without a time; the plan PostgreSQL keeps for the statement's text (generic, with the id a parameter)
// names those partitions alone, so a lookup locks two partitions, not every day of the retention.
func TestLookupReadsItsDays(t *testing.T) {
	db := scratchPostgres(t)
	ctx := context.Background()
	at := time.Date(2026, 3, 18, 23, 59, 59, 0, time.UTC)
	if err := prepareDays(ctx, db, at.AddDate(0, 0, -5), at.AddDate(0, 0, 5)); err != nil {
		t.Fatal(err)
	}
	sh, err := shapeOf(db, reflect.TypeFor[generationRow]())
	if err != nil {
		t.Fatal(err)
	}
	partitionsIn := func(id string) []string {
		t.Helper()
		var plan []string
		err := db.Transaction(func(tx *gorm.DB) error {
			q := rebind(sh.byKey + byID(id))
			if err := tx.Exec("SET LOCAL plan_cache_mode = force_generic_plan").Error; err != nil {
				return err
			}
			if err := tx.Exec("PREPARE lookup AS " + q).Error; err != nil {
				return err
			}
			if err := tx.Raw("EXPLAIN EXECUTE lookup('" + id + "')").Scan(&plan).Error; err != nil {
				return err
			}
			return tx.Exec("DEALLOCATE lookup").Error
		})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, line := range plan {
			if _, rest, ok := strings.Cut(line, " on generations_p"); ok {
				out = append(out, "p"+strings.Fields(rest)[0])
			}
		}
		return out
	}
	if got := partitionsIn(generation.NewID(at, "x")); strings.Join(got, " ") != "p20260318 p20260319" {
		t.Fatalf("a lookup of an id made at %v reads %v, want the partitions of that day and the next", at, got)
	}
	if got := partitionsIn("gen-x"); len(got) < 11 {
		t.Fatalf("a lookup of an id without a time reads %v, want every day", got)
	}
}
