package generation

import (
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
)

// Pages of a list of records, newest first.
const (
	DefaultPage = 50
	MaxPage     = 500
)

// PageSize is the size of a page asked for with limit: DefaultPage when none (0 or less), at most MaxPage.
func PageSize(limit int) int {
	if limit <= 0 {
		return DefaultPage
	}
	return min(limit, MaxPage)
}

// Cursor is a position in a list of records, newest first: the records after it are older than CreatedAt, or as
// old with a smaller ID. A page's last record is the next page's cursor (keyset pagination: no offset is counted).
type Cursor struct {
	CreatedAt time.Time
	ID        string
}

// CursorOf is the position of a record in a list.
func CursorOf(r *Record) Cursor { return Cursor{CreatedAt: r.CreatedAt.UTC(), ID: r.ID} }

// String is the cursor as a caller hands it back: opaque, URL-safe text.
func (c Cursor) String() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.CreatedAt.UnixMicro(), 10) + "." + c.ID))
}

var errCursor = domain.Invalid("cursor", "is not a cursor this list returned: pass a page's next cursor as it came")

// A cursor's time lies in the years 0001 to 9999 (what RFC 3339 writes), which every store holds: a record's time
// is the gateway's clock, and a time outside them (a forged cursor's) is past what PostgreSQL's timestamps hold, which
// its statement would refuse.
var (
	minCursorMicros = time.Date(1, time.January, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	maxCursorMicros = time.Date(10000, time.January, 1, 0, 0, 0, 0, time.UTC).UnixMicro() - 1
)

// ParseCursor reads a cursor String made; anything else is an invalid cursor (400).
func ParseCursor(s string) (Cursor, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return Cursor{}, errCursor
	}
	micros, id, ok := strings.Cut(string(raw), ".")
	n, err := strconv.ParseInt(micros, 10, 64)
	if !ok || err != nil || n < minCursorMicros || n > maxCursorMicros || id == "" || !domain.Storable(id) {
		return Cursor{}, errCursor
	}
	return Cursor{CreatedAt: time.UnixMicro(n).UTC(), ID: id}, nil
}

// After reports whether r comes after the cursor in a list, newest first.
func (c Cursor) After(r *Record) bool { return c.AfterAt(r.CreatedAt, r.ID) }

// AfterAt reports whether an item created at createdAt with id comes after the cursor in a list, newest first
// (lists of other things than records, such as video jobs, page by the same cursor).
func (c Cursor) AfterAt(createdAt time.Time, id string) bool {
	if !createdAt.Equal(c.CreatedAt) {
		return createdAt.Before(c.CreatedAt)
	}
	return id < c.ID
}
