package gormstore

import (
	"context"
	"encoding/base64"
	"math"
	"reflect"
	"strconv"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/ports"
	"github.com/switchboard-ai/switchboard/test/contract"
)

// TestRowValues: the values a row gives an insert (and, a column at a time, a bulk insert) are its GORM columns'
// values, in the columns' order, with what a pointer points to, or nil, in place of the pointer, and int as int64.
func TestRowValues(t *testing.T) {
	ctx := context.Background()
	db := scratchSQLite(t)
	full := contract.FullEntry("gen-1-a", time.Date(2026, 11, 23, 20, 6, 1, 123456000, time.UTC))
	bare := generation.Entry{Record: generation.Record{ID: "gen-1-b"}, Content: &generation.Content{}}
	for _, e := range []generation.Entry{full, bare} {
		g, c := toGenerationRow(e.Record), toContentRow(&e.Record, *e.Content)
		for _, row := range []struct {
			value  any
			values []any
		}{{&g, g.values()}, {&c, c.values()}} {
			rv := reflect.ValueOf(row.value).Elem()
			sh, err := shapeOf(db, rv.Type())
			if err != nil {
				t.Fatal(err)
			}
			if len(row.values) != len(sh.fields) {
				t.Fatalf("%s: %d values for %d columns", sh.table, len(row.values), len(sh.fields))
			}
			for i, f := range sh.fields {
				want := f.ReflectValueOf(ctx, rv)
				if want.Kind() == reflect.Pointer {
					if want.IsNil() {
						want = reflect.Zero(reflect.TypeFor[any]())
					} else {
						want = want.Elem()
					}
				}
				if want.Kind() == reflect.Int {
					want = reflect.ValueOf(want.Int())
				}
				if got := row.values[i]; !reflect.DeepEqual(got, want.Interface()) {
					t.Errorf("%s.%s of %s: %#v, want %#v", sh.table, f.DBName, e.Record.ID, got, want.Interface())
				}
			}
		}
	}
}

// TestListCursorBounds: a cursor the list reads (generation.ParseCursor) is one every store can list from: a
// forged cursor of a time before PostgreSQL's first (4713 BC), and any outside the years 0001 to 9999, is an
// invalid cursor (400) before the store is asked.
func TestListCursorBounds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cursor := func(micros int64) string {
		return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(micros, 10) + ".gen-x"))
	}
	first := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	last := time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC).UnixMicro()
	onEachDialect(t, func(t *testing.T, db *gorm.DB) {
		s := NewGenerationStore(db)
		for _, tt := range []struct {
			name   string
			micros int64
			valid  bool
		}{
			{"the first microsecond of year 1", first, true},
			{"the unix epoch", 0, true},
			{"the last microsecond of year 9999", last, true},
			{"before year 1", first - 1, false},
			{"after year 9999", last + 1, false},
			{"the least int64 (290309 BC)", math.MinInt64, false},
			{"the largest int64 (year 294247)", math.MaxInt64, false},
		} {
			c, err := generation.ParseCursor(cursor(tt.micros))
			switch {
			case err == nil:
				if _, err := s.ListGenerations(ctx, ports.GenerationFilter{After: &c}); err != nil {
					t.Errorf("%s: a cursor read is listed from, but the list failed: %v", tt.name, err)
				}
				if !tt.valid {
					t.Errorf("%s: ParseCursor read %v, want an invalid cursor", tt.name, c.CreatedAt)
				}
			case tt.valid:
				t.Errorf("%s: ParseCursor: %v", tt.name, err)
			case domain.KindOf(err) != domain.KindInvalid:
				t.Errorf("%s: ParseCursor: %v, want an invalid cursor", tt.name, err)
			}
		}
	})
}
