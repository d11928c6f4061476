// Package sqlitedialect is a GORM dialector for SQLite over modernc.org/sqlite, the maintained pure-Go (cgo-free)
// driver, used directly: the GORM dialectors published for pure-Go SQLite wrap forks that pin old drivers (the
// one this replaces bound a statement's parameters in time quadratic in their number).
//
// It speaks the subset of SQLite that GORM's query builder produces: backtick-quoted identifiers, INSERT and
// UPDATE with RETURNING, savepoints; row locks are dropped (SQLite locks the whole file). Schema changes are
// hand-written SQL, so the migrator only answers HasTable. The clause builders follow gorm.io/driver/sqlite
// (MIT, Copyright (c) 2013-NOW Jinzhu).
package sqlitedialect

import (
	"database/sql"
	"errors"
	"strconv"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/callbacks"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"
	"gorm.io/gorm/migrator"
	"gorm.io/gorm/schema"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Dialector opens DSN, a modernc.org/sqlite data source name ("file:PATH?_pragma=...").
type Dialector struct{ DSN string }

// Open returns the dialector for dsn.
func Open(dsn string) gorm.Dialector { return Dialector{DSN: dsn} }

var (
	_ gorm.Dialector                     = Dialector{}
	_ gorm.ErrorTranslator               = Dialector{}
	_ gorm.SavePointerDialectorInterface = Dialector{}
)

// Name is the dialect's name as GORM and tracing report it.
func (Dialector) Name() string { return "sqlite" }

// Initialize opens the pool and registers GORM's callbacks and this dialect's clause builders.
func (d Dialector) Initialize(db *gorm.DB) error {
	pool, err := sql.Open("sqlite", d.DSN)
	if err != nil {
		return err
	}
	db.ConnPool = pool
	callbacks.RegisterDefaultCallbacks(db, &callbacks.Config{
		CreateClauses:        []string{"INSERT", "VALUES", "ON CONFLICT", "RETURNING"},
		UpdateClauses:        []string{"UPDATE", "SET", "FROM", "WHERE", "RETURNING"},
		DeleteClauses:        []string{"DELETE", "FROM", "WHERE", "RETURNING"},
		LastInsertIDReversed: true,
	})
	db.ClauseBuilders["LIMIT"] = buildLimit
	db.ClauseBuilders["FOR"] = buildFor
	return nil
}

// buildLimit writes LIMIT and OFFSET; SQLite has no OFFSET without a LIMIT, so an offset alone is LIMIT -1.
func buildLimit(c clause.Clause, b clause.Builder) {
	limit, ok := c.Expression.(clause.Limit)
	if !ok {
		c.Build(b)
		return
	}
	n := -1
	if limit.Limit != nil && *limit.Limit >= 0 {
		n = *limit.Limit
	}
	if n >= 0 || limit.Offset > 0 {
		b.WriteString("LIMIT " + strconv.Itoa(n))
	}
	if limit.Offset > 0 {
		b.WriteString(" OFFSET " + strconv.Itoa(limit.Offset))
	}
}

// buildFor drops row locks (FOR UPDATE, FOR SHARE): SQLite has none; a write transaction holds the whole file.
func buildFor(c clause.Clause, b clause.Builder) {
	if _, ok := c.Expression.(clause.Locking); ok {
		return
	}
	c.Build(b)
}

// Migrator answers HasTable; the schema itself is hand-written SQL.
func (d Dialector) Migrator(db *gorm.DB) gorm.Migrator {
	return tables{migrator.Migrator{Config: migrator.Config{DB: db, Dialector: d}}}
}

type tables struct{ migrator.Migrator }

func (m tables) HasTable(value any) bool {
	var name string
	if s, ok := value.(string); ok {
		name = s
	} else if err := m.RunWithValue(value, func(stmt *gorm.Statement) error { name = stmt.Table; return nil }); err != nil {
		return false
	}
	var n int
	err := m.DB.Raw("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", name).Row().Scan(&n)
	return err == nil && n > 0
}

// DataTypeOf maps GORM's field types to SQLite's type affinities.
func (Dialector) DataTypeOf(field *schema.Field) string {
	switch field.DataType {
	case schema.Bool:
		return "numeric"
	case schema.Int, schema.Uint:
		if field.AutoIncrement {
			return "integer PRIMARY KEY AUTOINCREMENT"
		}
		return "integer"
	case schema.Float:
		return "real"
	case schema.String:
		return "text"
	case schema.Time:
		return "datetime"
	case schema.Bytes:
		return "blob"
	}
	return string(field.DataType)
}

// DefaultValueOf is what an INSERT writes for a field left to its default: NULL lets SQLite assign a rowid.
func (Dialector) DefaultValueOf(field *schema.Field) clause.Expression {
	if field.AutoIncrement {
		return clause.Expr{SQL: "NULL"}
	}
	return clause.Expr{SQL: "DEFAULT"}
}

// BindVarTo writes a positional parameter.
func (Dialector) BindVarTo(w clause.Writer, _ *gorm.Statement, _ any) { w.WriteByte('?') }

// QuoteTo quotes an identifier, each part of a dotted name on its own, doubling any backtick inside.
func (Dialector) QuoteTo(w clause.Writer, name string) {
	for i, part := range strings.Split(name, ".") {
		if i > 0 {
			w.WriteByte('.')
		}
		w.WriteByte('`')
		w.WriteString(strings.ReplaceAll(part, "`", "``"))
		w.WriteByte('`')
	}
}

// Explain renders a statement with its values, for GORM's logger.
func (Dialector) Explain(sql string, vars ...any) string {
	return logger.ExplainSQL(sql, nil, `"`, vars...)
}

// SavePoint and RollbackTo give GORM nested transactions. A failure is recorded on tx by Exec itself; returning
// it as well would record it twice.
func (Dialector) SavePoint(tx *gorm.DB, name string) error {
	tx.Exec("SAVEPOINT " + name)
	return nil
}

func (Dialector) RollbackTo(tx *gorm.DB, name string) error {
	tx.Exec("ROLLBACK TO SAVEPOINT " + name)
	return nil
}

// Translate turns unique and foreign-key violations into GORM's errors, so callers test for them without
// knowing the driver.
func (Dialector) Translate(err error) error {
	var e *sqlite.Error
	if !errors.As(err, &e) {
		return err
	}
	switch e.Code() {
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return gorm.ErrDuplicatedKey
	case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
		return gorm.ErrForeignKeyViolated
	}
	return err
}
