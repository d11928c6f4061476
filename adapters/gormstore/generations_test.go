package gormstore

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/domain/generation"
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
