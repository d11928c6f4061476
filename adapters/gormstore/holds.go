package gormstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"gorm.io/gorm"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/ports"
)

// lockBudget takes the lock that serialises reservations on one budget, whose row is table's where, until the
// transaction ends (PostgreSQL; SQLite serialises writers). What the reservation then reads must be one statement:
// under READ COMMITTED each statement sees the commits made before it, and a call booked between two statements
// would move from the holds to the spend unseen.
//
// On PostgreSQL the lock is a transaction-level advisory lock on the budget's name, and the row itself is only
// locked FOR KEY SHARE: the recorder's booking updates that row (a credit balance, a guardrail's window) inside its
// batch transaction, and a reservation that locked the row FOR UPDATE queued behind the whole batch and its commit.
// The booking moves a hold into the spend atomically, which the reservation's one read sees whole or not at all.
// KEY SHARE still conflicts with the FOR UPDATE that earlier versions take, so replicas of both versions exclude
// each other during a rolling upgrade.
//
// The same statement turns synchronous_commit off for the transaction (set_config(..., true) is SET LOCAL), so
// its commit does not wait for the disk: a hold is visible to every process as soon as it commits, as before, and
// only PostgreSQL's own crash could lose the holds of its last fraction of a second (the calls then in flight could
// overspend by their estimates). Every spend is still booked durably, with its record. Waiting for the disk inside
// the lock cost a call 1-3 ms.
func lockBudget(ctx context.Context, tx *txStatements, table, where string, args ...any) error {
	if !tx.postgres {
		return nil
	}
	q := "SELECT set_config('synchronous_commit', 'off', true), pg_advisory_xact_lock(hashtextextended(?, 0)) FROM " +
		table + " WHERE " + where + " FOR KEY SHARE"
	if _, err := tx.exec(ctx, q, append([]any{fmt.Sprint("switchboard budget ", table, args)}, args...)...); err != nil {
		return fmt.Errorf("lock %s: %w", table, err)
	}
	return nil
}

// hold is one reservation on a budget.
type hold struct {
	id string
	// limits are the budget's, one a window (a key's limit: one; a workspace's budgets: one an interval); the
	// credits' comes from the store.
	limits       []domain.Micros
	amount       domain.Micros
	now, expires time.Time
}

// admit decides a batch in its order against a budget of which committed is spent or held, a sum a window: a
// hold that fits within every window's limit (limits says which), with what the holds admitted before it in the
// batch take, is admitted, and one that does not is told what was left in the tightest window. It returns the
// holds admitted.
func admit(batch []*pending[hold], limits func(h hold) []domain.Micros, committed []domain.Micros) []hold {
	var taken domain.Micros
	var out []hold
	for _, p := range batch {
		fits, left := true, domain.Micros(-1)
		for i, l := range limits(p.req) {
			fits = fits && domain.Within(l, committed[i], taken, p.req.amount)
			if w := domain.Left(l, committed[i], taken); left < 0 || w < left {
				left = w
			}
		}
		if fits {
			p.res.Held, taken = true, taken+p.req.amount
			out = append(out, p.req)
		} else {
			p.res.Left = left
		}
	}
	return out
}

// earliest is the earliest now of a batch: holds live at it count, so a batch never counts fewer than its first.
func earliest(batch []*pending[hold]) time.Time {
	t := batch[0].req.now
	for _, p := range batch[1:] {
		if p.req.now.Before(t) {
			t = p.req.now
		}
	}
	return t.UTC()
}

// settle gives every reservation of a batch the transaction's error, if it failed.
func settle(batch []*pending[hold], err error) {
	if err == nil {
		return
	}
	for _, p := range batch {
		p.res, p.err = ports.Reservation{}, err
	}
}

// insertHolds inserts the holds admitted; owner, when set, is the column (and value) that says whose they are. On
// PostgreSQL one INSERT takes them all (a statement is a round trip); on SQLite one row at a time, a statement of
// one shape (see prepared).
func insertHolds(ctx context.Context, tx *txStatements, table string, owner *ownerCol, holds []hold) error {
	cols, width := "(id, amount_micros, expires_at)", 3
	if owner != nil {
		cols, width = "(id, amount_micros, expires_at, "+owner.col+")", 4
	}
	n := 1
	if tx.postgres {
		n = len(holds)
	}
	for len(holds) > 0 {
		rows := holds[:min(n, len(holds))]
		holds = holds[len(rows):]
		args := make([]any, 0, width*len(rows))
		for _, h := range rows {
			args = append(args, h.id, int64(h.amount), h.expires.UTC())
			if owner != nil {
				args = append(args, owner.id)
			}
		}
		q := "INSERT INTO " + table + " " + cols + " VALUES " + placeholders(len(rows), width)
		if _, err := tx.exec(ctx, q, args...); err != nil {
			return fmt.Errorf("insert %s: %w", table, err)
		}
	}
	return nil
}

// ownerCol is the column of a holds table that names whose budget a hold is against, and its value.
type ownerCol struct{ col, id string }

// ownedBudget is a budget that belongs to a row (a key, a workspace) and whose holds name it: the row that
// lockBudget locks, the holds' table, and the one statement that reads, in one snapshot, what each of its windows
// has committed (spent, and held by the calls in flight).
type ownedBudget struct {
	name      string // in errors
	table     string // the owner's table, whose row is locked by its id column
	idCol     string
	holds     string
	owner     ownerCol
	committed func(now time.Time) (string, []any)
}

// reserve decides a batch of holds against the budget: its owner's lock, then one read of every window's
// committed sum, then the holds admitted (expired ones dropped first).
func (s *AccountStore) reserve(ctx context.Context, b ownedBudget, batch []*pending[hold]) error {
	now := earliest(batch)
	return transaction(ctx, s.db, &s.prepared, func(tx *txStatements) error {
		if err := lockBudget(ctx, tx, b.table, b.idCol+" = ?", b.owner.id); err != nil {
			return err
		}
		q, args := b.committed(now)
		windows := len(batch[0].req.limits)
		sums := make([]int64, windows)
		dst := make([]any, windows)
		for i := range sums {
			dst[i] = &sums[i]
		}
		// One statement, so one snapshot: a call booked meanwhile moves from the holds to the spend atomically.
		if err := tx.queryRow(ctx, q, args...).Scan(dst...); err != nil {
			return fmt.Errorf("sum %s spend and holds: %w", b.name, err)
		}
		committed := make([]domain.Micros, windows)
		for i, v := range sums {
			committed[i] = domain.Micros(v)
		}
		holds := admit(batch, func(h hold) []domain.Micros { return h.limits }, committed)
		if len(holds) == 0 {
			return nil
		}
		if _, err := tx.exec(ctx, "DELETE FROM "+b.holds+" WHERE "+b.owner.col+" = ? AND expires_at <= ?", b.owner.id, now); err != nil {
			return fmt.Errorf("drop expired %s holds: %w", b.name, err)
		}
		return insertHolds(ctx, tx, b.holds, &b.owner, holds)
	})
}

// ReserveUsage holds amount against the key's limit when its usage on days from since, the holds in flight and
// amount stay within limit; false when they would not. Reservations on one key (and period) arriving together
// share a transaction (see batches).
func (s *AccountStore) ReserveUsage(ctx context.Context, id, hash string, since time.Time, limit, amount domain.Micros,
	now, expires time.Time) (ports.Reservation, error) {
	day := since.UTC().Format(dayLayout)
	b := ownedBudget{name: "key", table: "api_keys", idCol: "hash", holds: "key_holds", owner: ownerCol{"key_hash", hash},
		committed: func(now time.Time) (string, []any) {
			return `SELECT (SELECT COALESCE(SUM(micros), 0) FROM key_usage WHERE key_hash = ? AND day >= ?)
				+ (SELECT COALESCE(SUM(amount_micros), 0) FROM key_holds WHERE key_hash = ? AND expires_at > ?)`,
				[]any{hash, day, hash, now}
		}}
	return s.reservations.do(ctx, "key "+hash+" "+day,
		hold{id: id, limits: []domain.Micros{limit}, amount: amount, now: now, expires: expires},
		func(ctx context.Context, batch []*pending[hold]) { settle(batch, s.reserve(ctx, b, batch)) })
}

// ReserveWorkspace holds amount against every budget of the workspace (each over its own window of the
// workspace's activity, with the holds in flight), or none when one of them could not hold it. Reservations on
// one workspace (with the same budgets and windows) arriving together share a transaction, as a key's do.
func (s *AccountStore) ReserveWorkspace(ctx context.Context, id, workspaceID string, budgets []account.Budget,
	amount domain.Micros, now, expires time.Time) (ports.Reservation, error) {
	limits := make([]domain.Micros, len(budgets))
	sums := make([]string, len(budgets))
	var windows []any
	for i, bu := range budgets {
		limits[i] = bu.Limit
		spend := "cost_micros"
		if bu.IncludeBYOK {
			spend = "cost_micros + byok_cost_micros"
		}
		sums[i] = "(SELECT COALESCE(SUM(" + spend + "), 0) FROM workspace_activity WHERE workspace_id = ? AND day >= ?) + h.held"
		windows = append(windows, workspaceID, bu.Interval.Start(now).Format(dayLayout))
	}
	b := ownedBudget{name: "workspace", table: "workspaces", idCol: "id", holds: "workspace_holds",
		owner: ownerCol{"workspace_id", workspaceID},
		committed: func(now time.Time) (string, []any) {
			return "SELECT " + strings.Join(sums, ", ") + ` FROM (SELECT COALESCE(SUM(amount_micros), 0) AS held
				FROM workspace_holds WHERE workspace_id = ? AND expires_at > ?) h`, append(slices.Clone(windows), workspaceID, now)
		}}
	return s.reservations.do(ctx, fmt.Sprint("workspace ", workspaceID, windows, limits),
		hold{id: id, limits: limits, amount: amount, now: now, expires: expires},
		func(ctx context.Context, batch []*pending[hold]) { settle(batch, s.reserve(ctx, b, batch)) })
}

// ReserveCredits holds amount against the organization's credits when what was used, the holds in flight and
// amount stay within what was added; false when they would not. Reservations arriving together share a
// transaction (see batches).
func (s *CreditStore) ReserveCredits(ctx context.Context, id string, amount domain.Micros, now, expires time.Time) (ports.Reservation, error) {
	return s.reservations.do(ctx, "", hold{id: id, amount: amount, now: now, expires: expires},
		func(ctx context.Context, batch []*pending[hold]) { settle(batch, s.reserveCredits(ctx, batch)) })
}

func (s *CreditStore) reserveCredits(ctx context.Context, batch []*pending[hold]) error {
	now := earliest(batch)
	return transaction(ctx, s.db, &s.prepared, func(tx *txStatements) error {
		if err := lockBudget(ctx, tx, "credit_balance", "id = 1"); err != nil {
			return err
		}
		var total, committed int64 // one statement, one snapshot, as for keys
		if err := tx.queryRow(ctx, `SELECT total_micros, used_micros + (SELECT COALESCE(SUM(amount_micros), 0) FROM credit_holds
			WHERE expires_at > ?) AS committed FROM credit_balance WHERE id = 1`, now).Scan(&total, &committed); err != nil {
			return fmt.Errorf("select credits and holds: %w", err)
		}
		holds := admit(batch, func(hold) []domain.Micros { return []domain.Micros{domain.Micros(total)} },
			[]domain.Micros{domain.Micros(committed)})
		if len(holds) == 0 {
			return nil
		}
		if _, err := tx.exec(ctx, "DELETE FROM credit_holds WHERE expires_at <= ?", now); err != nil {
			return fmt.Errorf("drop expired credit holds: %w", err)
		}
		return insertHolds(ctx, tx, "credit_holds", nil, holds)
	})
}

// vacuumHoldsAfter is how many holds the records' batches settle (delete) before the holds tables are vacuumed.
const vacuumHoldsAfter = 2000

// holdsVacuum keeps PostgreSQL's holds tables small. Every call made with a key limit, credits or a guardrail
// budget inserts a hold, and its record's batch deletes it: as many dead rows as calls, which every reservation's
// sum of the holds in flight reads until VACUUM removes them (credit_holds has no index that sum could use, and
// an index keeps its dead entries too), and whose pages no insert reuses until VACUUM has recorded their free
// space. Autovacuum looks at a database once a minute at best (autovacuum_naptime), and a gateway taking 2-3k
// calls a second leaves 100k dead holds in a minute: with credits on and no vacuum, benche2e's 100k calls at c=32
// grew credit_holds to 94k dead rows and 766 pages, and the last 10k calls ran at 0.50-0.76 of the first 10k's
// rate (PostgreSQL's CPU per call 184-240 µs). The store vacuums the three tables itself, in the
// recorder's writer (off the calls' path), each time its batches have settled vacuumHoldsAfter holds: tables of
// a few dozen pages, a millisecond or two each time. SKIP_LOCKED passes over a table another VACUUM (autovacuum's)
// or a migration holds, rather than holding up the writer. A role that does not own the tables gets a warning from
// VACUUM, not an error, and leaves them to autovacuum; a vacuum that fails leaves them to the next.
type holdsVacuum struct {
	dead    atomic.Int64 // holds settled since the last vacuum
	running atomic.Bool
}

// settled counts n holds settled, and vacuums the holds tables when vacuumHoldsAfter have been, unless another
// batch's writer is already at it.
func (v *holdsVacuum) settled(ctx context.Context, db *gorm.DB, n int64) {
	if v.dead.Add(n) < vacuumHoldsAfter || !v.running.CompareAndSwap(false, true) {
		return
	}
	defer v.running.Store(false)
	v.dead.Store(0)
	_ = db.WithContext(ctx).Exec("VACUUM (SKIP_LOCKED) key_holds, credit_holds, guardrail_holds, workspace_holds").Error
}
