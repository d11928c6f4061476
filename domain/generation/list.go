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

// ParseCursor reads a cursor String made; anything else is an invalid cursor (400).
func ParseCursor(s string) (Cursor, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return Cursor{}, errCursor
	}
	micros, id, ok := strings.Cut(string(raw), ".")
	n, err := strconv.ParseInt(micros, 10, 64)
	if !ok || err != nil || id == "" || !domain.Storable(id) {
		return Cursor{}, errCursor
	}
	return Cursor{CreatedAt: time.UnixMicro(n).UTC(), ID: id}, nil
}

// After reports whether r comes after the cursor in a list, newest first.
func (c Cursor) After(r *Record) bool {
	if !r.CreatedAt.Equal(c.CreatedAt) {
		return r.CreatedAt.Before(c.CreatedAt)
	}
	return r.ID < c.ID
}
