package gormstore

import (
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"

	"github.com/switchboard-ai/switchboard/domain"
)

// ErrUnavailable is what every store returns when the database cannot be reached or has dropped the
// connection: a 503 the caller may retry, not a 500.
var ErrUnavailable = domain.E(domain.KindUnavailable, "service_unavailable",
	"service temporarily unavailable: a backend (the database) cannot be reached; retry shortly").RetryIn(2 * time.Second)

// classifying wraps a dialector so that every error GORM records (statements, Begin, Commit) passes the
// dialector's own translation and then classify: the store ports never leak a driver's connection error.
type classifying struct {
	gorm.Dialector
	busy func(error) bool // the dialect's "locked, try again later"
}

var (
	_ gorm.ErrorTranslator               = classifying{}
	_ gorm.SavePointerDialectorInterface = classifying{}
)

func (d classifying) Translate(err error) error {
	if t, ok := d.Dialector.(gorm.ErrorTranslator); ok {
		err = t.Translate(err)
	}
	if d.busy != nil && d.busy(err) {
		return ErrUnavailable.Wrap(err)
	}
	return classify(err)
}

func (d classifying) SavePoint(tx *gorm.DB, name string) error {
	return d.Dialector.(gorm.SavePointerDialectorInterface).SavePoint(tx, name)
}

func (d classifying) RollbackTo(tx *gorm.DB, name string) error {
	return d.Dialector.(gorm.SavePointerDialectorInterface).RollbackTo(tx, name)
}

// classify turns a failure to reach the database, a connection it dropped, or a transaction it aborted that
// succeeds when tried again (a deadlock, a serialization failure, a lock not available) into ErrUnavailable; any
// other error is returned as it is.
func classify(err error) error {
	if err == nil || errors.Is(err, ErrUnavailable) || !unreachable(err) {
		return err
	}
	return ErrUnavailable.Wrap(err)
}

func unreachable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return unavailableState(pgErr.Code)
	}
	var connectErr *pgconn.ConnectError
	var opErr *net.OpError
	return errors.As(err, &connectErr) || errors.As(err, &opErr) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, pgconn.ErrConnClosed) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// unavailableState reports the SQLSTATEs that mean "this server cannot serve you now": class 08 (connection
// exception), 57P01 admin_shutdown (the backend was terminated), 57P02 crash_shutdown, 57P03
// cannot_connect_now (starting up or shutting down) and 53300 too_many_connections; and the transient ones, where
// the same statement succeeds when tried again: 40P01 deadlock_detected, 40001 serialization_failure and 55P03
// lock_not_available.
func unavailableState(code string) bool {
	switch code {
	case "57P01", "57P02", "57P03", "53300", "40P01", "40001", "55P03":
		return true
	}
	return strings.HasPrefix(code, "08")
}

// sqliteBusy reports SQLITE_BUSY and SQLITE_LOCKED (primary codes 5 and 6, extended codes included): the file
// stayed locked past the busy timeout.
func sqliteBusy(err error) bool {
	var coded interface{ Code() int }
	if !errors.As(err, &coded) {
		return false
	}
	switch coded.Code() & 0xff {
	case 5, 6:
		return true
	}
	return false
}
