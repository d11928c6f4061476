package gormstore

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/gorm"
	"gorm.io/gorm/schema"
)

// copyTable is one table's share of a bulk write: its rows, as GORM row structs.
type copyTable struct {
	name string
	rows any // a slice of row structs
}

// errCopyConflict means a row already exists; COPY cannot skip it, so the caller falls back to INSERT.
var errCopyConflict = errors.New("copy hit an existing row")

var schemas sync.Map

// copyInto writes every table in one transaction with PostgreSQL's COPY, the fastest bulk path, and then runs
// the statements in the same transaction. Columns come from the GORM row structs, so there is one definition of
// each table's shape.
func copyInto(ctx context.Context, db *gorm.DB, tables []copyTable, then []statement) error {
	return classify(copyTables(ctx, db, tables, then))
}

func copyTables(ctx context.Context, db *gorm.DB, tables []copyTable, then []statement) error {
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(driverConn any) error {
		pc := driverConn.(*stdlib.Conn).Conn()
		tx, err := pc.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
		for _, t := range tables {
			cols, rows, err := columnsAndValues(ctx, db, t.rows)
			if err != nil {
				return err
			}
			if len(rows) == 0 {
				continue
			}
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{t.name}, cols, pgx.CopyFromRows(rows)); err != nil {
				var pgErr *pgconn.PgError
				if errors.As(err, &pgErr) && pgErr.Code == "23505" {
					return errCopyConflict
				}
				return fmt.Errorf("copy into %s: %w", t.name, err)
			}
		}
		for _, st := range then {
			if _, err := tx.Exec(ctx, rebind(st.sql), st.args...); err != nil {
				return fmt.Errorf("book charges: %w", err)
			}
		}
		return tx.Commit(ctx)
	})
}

func columnsAndValues(ctx context.Context, db *gorm.DB, slice any) ([]string, [][]any, error) {
	sv := reflect.ValueOf(slice)
	elem := sv.Type().Elem()
	cached, ok := schemas.Load(elem)
	if !ok {
		s, err := schema.Parse(reflect.New(elem).Interface(), &sync.Map{}, db.NamingStrategy)
		if err != nil {
			return nil, nil, err
		}
		cached, _ = schemas.LoadOrStore(elem, s)
	}
	s := cached.(*schema.Schema)
	fields := make([]*schema.Field, 0, len(s.Fields))
	cols := make([]string, 0, len(s.Fields))
	for _, f := range s.Fields {
		if f.DBName != "" {
			fields = append(fields, f)
			cols = append(cols, f.DBName)
		}
	}
	rows := make([][]any, sv.Len())
	for i := range rows {
		rv := sv.Index(i)
		row := make([]any, len(fields))
		for j, f := range fields {
			row[j], _ = f.ValueOf(ctx, rv)
		}
		rows[i] = row
	}
	return cols, rows, nil
}
