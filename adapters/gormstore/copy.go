package gormstore

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/gorm"
	"gorm.io/gorm/schema"
)

// copyTable is one table's share of a bulk write: its shape, and its rows' values in the shape's columns.
type copyTable struct {
	shape *shape
	rows  [][]any
}

// errCopyConflict means a row already exists; COPY cannot skip it, so the caller falls back to INSERT.
var errCopyConflict = errors.New("copy hit an existing row")

// pipelineRows is the most rows copyInto writes by INSERTs sent with its statements rather than by COPY.
const pipelineRows = 16

// copyInto writes every table in one transaction with PostgreSQL's COPY, the fastest bulk path, and then runs
// the statements in the same transaction, in one round trip. It says how many holds the statements settled.
//
// A few rows (at most pipelineRows: a recorder's batch at a low rate) go instead as one INSERT each, sent with the
// statements in one pipeline, which PostgreSQL runs as one implicit transaction committed at its end: one round
// trip in all, where BEGIN, each table's COPY (its command, then its data, each answered) and COMMIT took six
// more, each a wake-up of the gateway and of its backend. An INSERT that meets a stored row fails, as COPY does,
// and rolls the whole pipeline back.
func copyInto(ctx context.Context, db *gorm.DB, tables []copyTable, then []statement) (settled int64, err error) {
	settled, err = copyTables(ctx, db, tables, then)
	return settled, classify(err)
}

func copyTables(ctx context.Context, db *gorm.DB, tables []copyTable, then []statement) (settled int64, err error) {
	sqlDB, err := db.DB()
	if err != nil {
		return 0, err
	}
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	err = conn.Raw(func(driverConn any) error {
		pc := driverConn.(*stdlib.Conn).Conn()
		if inserts, ok := rowInserts(tables); ok {
			settled, err = execBatch(ctx, pc, slices.Concat(inserts, then))
			if isConflict(err) {
				return errCopyConflict
			}
			if err != nil {
				return fmt.Errorf("insert and book charges: %w", err)
			}
			return nil
		}
		tx, err := pc.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
		for _, t := range tables {
			if len(t.rows) == 0 {
				continue
			}
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{t.shape.table}, t.shape.cols, pgx.CopyFromRows(t.rows)); err != nil {
				if isConflict(err) {
					return errCopyConflict
				}
				return fmt.Errorf("copy into %s: %w", t.shape.table, err)
			}
		}
		if settled, err = execBatch(ctx, tx, then); err != nil {
			return fmt.Errorf("book charges: %w", err)
		}
		return tx.Commit(ctx)
	})
	return settled, err
}

// rowInserts are the statements that write the tables' rows one INSERT each, when they are few enough.
func rowInserts(tables []copyTable) ([]statement, bool) {
	n := 0
	for _, t := range tables {
		n += len(t.rows)
	}
	if n > pipelineRows {
		return nil, false
	}
	out := make([]statement, 0, n)
	for _, t := range tables {
		for _, row := range t.rows {
			out = append(out, statement{sql: t.shape.add, args: row})
		}
	}
	return out, true
}

// isConflict reports a unique violation: a row already stored.
func isConflict(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// batchSender is a connection or a transaction on it.
type batchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// execBatch runs the statements in one round trip (a pipeline) rather than one each, and says how many holds they
// settled. Sent on a connection outside a transaction, they are one implicit transaction.
func execBatch(ctx context.Context, tx batchSender, sts []statement) (settled int64, err error) {
	var b pgx.Batch
	for _, st := range sts {
		b.Queue(rebind(st.sql), st.args...)
	}
	br := tx.SendBatch(ctx, &b)
	for _, st := range sts {
		tag, err := br.Exec()
		if err != nil {
			br.Close()
			return 0, err
		}
		if st.settles {
			settled += tag.RowsAffected()
		}
	}
	return settled, br.Close()
}

// shape is a table's columns, from its GORM row struct, so that there is one definition of each table's shape.
type shape struct {
	table  string
	fields []*schema.Field
	cols   []string
	// add writes one row, and fails when its primary key is stored: INSERT INTO t (cols) VALUES (?, ...)
	add string
	// insert writes one row, or nothing when its primary key is stored: add ON CONFLICT (pk) DO NOTHING.
	insert string
	// byKey reads one row: SELECT cols FROM t WHERE pk = ?
	byKey string
}

var shapes sync.Map // reflect.Type -> *shape

func shapeOf(db *gorm.DB, t reflect.Type) (*shape, error) {
	if cached, ok := shapes.Load(t); ok {
		return cached.(*shape), nil
	}
	s, err := schema.Parse(reflect.New(t).Interface(), &sync.Map{}, db.NamingStrategy)
	if err != nil {
		return nil, err
	}
	sh := &shape{table: s.Table}
	for _, f := range s.Fields {
		if f.DBName != "" {
			sh.fields = append(sh.fields, f)
			sh.cols = append(sh.cols, f.DBName)
		}
	}
	sh.add = "INSERT INTO " + s.Table + " (" + strings.Join(sh.cols, ", ") + ") VALUES " + placeholders(1, len(sh.cols))
	sh.insert = sh.add + " ON CONFLICT (" + s.PrioritizedPrimaryField.DBName + ") DO NOTHING"
	sh.byKey = "SELECT " + strings.Join(sh.cols, ", ") + " FROM " + s.Table + " WHERE " + s.PrioritizedPrimaryField.DBName + " = ?"
	cached, _ := shapes.LoadOrStore(t, sh)
	return cached.(*shape), nil
}

// pointers are the addresses of row's fields, in the columns' order, to scan a row into; row is addressable.
func (sh *shape) pointers(ctx context.Context, row reflect.Value) []any {
	out := make([]any, len(sh.fields))
	for i, f := range sh.fields {
		out[i] = f.ReflectValueOf(ctx, row).Addr().Interface()
	}
	return out
}
