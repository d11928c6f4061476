package gormstore

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

	"gorm.io/gorm"
)

// maxPrepared bounds the statements one store keeps prepared; beyond it, statements are parsed each time.
const maxPrepared = 64

// prepared keeps SQLite statements prepared on the pool, by their SQL, so that a statement run again is only
// bound and stepped: parsing cost SQLite more than running (a quarter of the recorder's CPU on batches of one).
// PostgreSQL needs none of this: pgx prepares and caches the statements it runs.
type prepared struct {
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

// translate passes an error from database/sql through the dialector, as GORM passes its own (see classifying).
func translate(db *gorm.DB, err error) error {
	if t, ok := db.Dialector.(gorm.ErrorTranslator); ok && err != nil {
		return t.Translate(err)
	}
	return err
}

// txStatements runs statements with ? placeholders in one transaction: rebound for pgx on PostgreSQL; on SQLite
// prepared once and reused.
type txStatements struct {
	tx       *sql.Tx
	db       *sql.DB
	postgres bool
	p        *prepared
	inTx     map[string]*sql.Stmt
	missed   []string // statements this transaction parsed, to prepare once it has ended
}

// transaction runs f in a transaction on db, with statements prepared by p, and commits when f returns nil.
func transaction(ctx context.Context, db *gorm.DB, p *prepared, f func(tx *txStatements) error) error {
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	tx, err := sqlDB.BeginTx(ctx, nil)
	if err != nil {
		return translate(db, fmt.Errorf("begin: %w", err))
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	t := &txStatements{tx: tx, db: sqlDB, postgres: Dialect(db) == Postgres, p: p, inTx: map[string]*sql.Stmt{}}
	if err := f(t); err != nil {
		return translate(db, err)
	}
	return translate(db, t.commit(ctx))
}

// exec runs query with args and says how many rows it changed.
func (t *txStatements) exec(ctx context.Context, query string, args ...any) (int64, error) {
	var res sql.Result
	var err error
	if st := t.stmt(ctx, query); st != nil {
		res, err = st.ExecContext(ctx, args...)
	} else {
		res, err = t.tx.ExecContext(ctx, t.rebound(query), args...)
	}
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// queryRow runs a query for one row.
func (t *txStatements) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	if st := t.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, t.rebound(query), args...)
}

func (t *txStatements) rebound(query string) string {
	if t.postgres {
		return rebind(query)
	}
	return query
}

// stmt is query prepared for this transaction, or nil to run it unprepared: on PostgreSQL, and on SQLite the
// first time (it is prepared on the pool after the commit).
func (t *txStatements) stmt(ctx context.Context, query string) *sql.Stmt {
	if t.postgres {
		return nil
	}
	if st, ok := t.inTx[query]; ok {
		return st
	}
	t.p.mu.Lock()
	base, ok := t.p.stmts[query]
	t.p.mu.Unlock()
	if !ok {
		t.missed = append(t.missed, query)
		return nil
	}
	st := t.tx.StmtContext(ctx, base)
	t.inTx[query] = st
	return st
}

// commit commits the transaction, then prepares on the pool what it had to parse (the pool's one SQLite
// connection was the transaction's until then).
func (t *txStatements) commit(ctx context.Context) error {
	if err := t.tx.Commit(); err != nil {
		return err
	}
	if len(t.missed) == 0 {
		return nil
	}
	for _, q := range t.missed {
		_, _ = t.p.stmt(ctx, t.db, q) // when it fails, the statement runs unprepared next time too
	}
	return nil
}

// stmt is query prepared on db, prepared now if it was not; nil when maxPrepared are. It must not be called
// within a transaction on SQLite: preparing waits for the pool's one connection.
func (p *prepared) stmt(ctx context.Context, db *sql.DB, query string) (*sql.Stmt, error) {
	p.mu.Lock()
	st, ok := p.stmts[query]
	full := len(p.stmts) >= maxPrepared
	p.mu.Unlock()
	if ok || full {
		return st, nil
	}
	// Not under the lock: preparing waits for the connection, which a transaction may hold.
	st, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if cached, ok := p.stmts[query]; ok {
		_ = st.Close()
		return cached, nil
	}
	if p.stmts == nil {
		p.stmts = map[string]*sql.Stmt{}
	}
	p.stmts[query] = st
	return st, nil
}

// queryRow runs a query for one row outside a transaction: rebound for pgx on PostgreSQL, prepared once and
// reused on SQLite.
func (p *prepared) queryRow(ctx context.Context, db *sql.DB, postgres bool, query string, args ...any) *sql.Row {
	if postgres {
		return db.QueryRowContext(ctx, rebind(query), args...)
	}
	if st, err := p.stmt(ctx, db, query); err == nil && st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return db.QueryRowContext(ctx, query, args...) // unprepared, it reports the query's own error, if any
}
