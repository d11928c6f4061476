package gormstore

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/gorm"
	"gorm.io/gorm/schema"
)

// bulkTable is one table's share of a bulk write: its shape, and its rows' values in the shape's columns.
type bulkTable struct {
	shape *shape
	rows  [][]any
}

// errStored means a row of the batch is stored already; a bulk write cannot skip it, so the caller writes the batch
// a row at a time.
var errStored = errors.New("a row of the batch is stored already")

// insertBulk writes every table's rows, each table's with one INSERT of arrays (a column's values in one parameter,
// unnested), and then runs the statements, all in one pipeline, which PostgreSQL runs as one implicit transaction
// committed at its end: one round trip and one statement a table, whatever the batch, each prepared once per
// connection. It says how many holds the statements settled.
//
// COPY took five round trips for the same batch (BEGIN, each table's COPY, the statements, COMMIT), each a wake-up of
// the gateway and of its backend and two goroutines a COPY in pgx, and its rows were encoded a value at a time; at
// the recorder's batches of a few dozen records that cost the gateway more than the rows themselves. One INSERT a
// row, as a pipeline took a few rows before, costs PostgreSQL an executor a row. An INSERT that meets a stored row
// fails, and rolls the whole pipeline back.
func insertBulk(ctx context.Context, db *gorm.DB, tables []bulkTable, then []statement) (settled int64, err error) {
	defer func() { err = classify(err) }()
	sqlDB, err := db.DB()
	if err != nil {
		return 0, err
	}
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	sts := make([]statement, 0, len(tables)+len(then))
	for _, t := range tables {
		if len(t.rows) > 0 {
			sts = append(sts, statement{sql: t.shape.addAll, args: t.shape.columns(t.rows)})
		}
	}
	err = conn.Raw(func(driverConn any) error {
		settled, err = execBatch(ctx, driverConn.(*stdlib.Conn).Conn(), append(sts, then...))
		return err
	})
	if isConflict(err) {
		return 0, errStored
	}
	if err != nil {
		return 0, fmt.Errorf("insert and book charges: %w", err)
	}
	return settled, nil
}

// columns are rows' values a column at a time, each column one array parameter of addAll.
func (sh *shape) columns(rows [][]any) []any {
	values := make(pgtype.FlatArray[any], len(rows)*len(sh.cols))
	out := make([]any, len(sh.cols))
	for c := range sh.cols {
		col := values[c*len(rows) : (c+1)*len(rows) : (c+1)*len(rows)]
		for r, row := range rows {
			col[r] = row[c]
		}
		out[c] = col
	}
	return out
}

// isConflict reports a unique violation: a row already stored.
func isConflict(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// execBatch runs the statements in one round trip (a pipeline) rather than one each, as one implicit transaction,
// and says how many holds they settled.
func execBatch(ctx context.Context, conn *pgx.Conn, sts []statement) (settled int64, err error) {
	var b pgx.Batch
	for _, st := range sts {
		b.Queue(rebind(st.sql), st.args...)
	}
	br := conn.SendBatch(ctx, &b)
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
	// addAll writes rows given a column at a time, each column an array, and fails when a primary key is stored
	// (PostgreSQL): INSERT INTO t (cols) SELECT unnest(?::text[]), unnest(?::int8[]), ... The unnests of a select
	// list advance together, one row an index of the arrays.
	addAll string
	// insert writes one row, or nothing when its primary key is stored: INSERT INTO t (cols) VALUES (?, ...) ON
	// CONFLICT DO NOTHING. No conflict target: a table kept by day has no key across its partitions, and the row
	// meets its stored self in its day's (see days.go).
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
	var arrays []string
	for _, f := range s.Fields {
		if f.DBName == "" {
			continue
		}
		sh.fields = append(sh.fields, f)
		sh.cols = append(sh.cols, f.DBName)
		array, err := arrayOf(f.FieldType)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", s.Table, f.DBName, err)
		}
		arrays = append(arrays, "unnest(?::"+array+")")
	}
	into := "INSERT INTO " + s.Table + " (" + strings.Join(sh.cols, ", ") + ")"
	sh.addAll = into + " SELECT " + strings.Join(arrays, ", ")
	sh.insert = into + " VALUES " + placeholders(1, len(sh.cols)) + " ON CONFLICT DO NOTHING"
	sh.byKey = "SELECT " + strings.Join(sh.cols, ", ") + " FROM " + s.Table + " WHERE " + s.PrioritizedPrimaryField.DBName + " = ?"
	cached, _ := shapes.LoadOrStore(t, sh)
	return cached.(*shape), nil
}

// arrayOf is PostgreSQL's array type for the values of a row field of type t (see the rows' values methods: a
// pointer's value or NULL, int as int64); a value given to a column of another type is converted as an INSERT's
// value is (int8 to an INTEGER column).
func arrayOf(t reflect.Type) (string, error) {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == reflect.TypeFor[time.Time]():
		return "timestamptz[]", nil
	case t.Kind() == reflect.String:
		return "text[]", nil
	case t.Kind() == reflect.Int || t.Kind() == reflect.Int64:
		return "int8[]", nil
	case t.Kind() == reflect.Bool:
		return "bool[]", nil
	}
	return "", fmt.Errorf("no PostgreSQL array for a field of type %s", t)
}

// pointers are the addresses of row's fields, in the columns' order, to scan a row into; row is addressable.
func (sh *shape) pointers(ctx context.Context, row reflect.Value) []any {
	out := make([]any, len(sh.fields))
	for i, f := range sh.fields {
		out[i] = f.ReflectValueOf(ctx, row).Addr().Interface()
	}
	return out
}
