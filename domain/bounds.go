package domain

import (
	"fmt"

	"github.com/switchboard-ai/switchboard/domain/jsonenc"
)

// MaxListEntries bounds every list of a request body that is decoded whole (and every object's number of keys, a
// key given twice counted twice), and MaxValues the values in it in all, at every depth: free-form objects (a
// preset's configuration, provider.options) could otherwise nest lists of 1,000 lists. Bulk assignments stay far
// below the databases' limits on statement parameters, and a guardrail with every list full holds some 14,000
// values.
const (
	MaxListEntries = 1000
	MaxValues      = 20_000
)

// valueBounds are MaxListEntries and MaxValues. Checked on the bytes before a decoder holds what it reads: decoded
// first, a 10 MiB body of the shortest list items ({} content filters, "" ids, [] in provider.options) cost 40 to
// 150 times its size in memory before it was refused.
var valueBounds = jsonenc.Bounds{Entries: MaxListEntries, Values: MaxValues}

// CheckBounds refuses raw, the JSON value of field ("" for a whole body), when it holds a list or object past
// MaxListEntries or more than MaxValues values: a 400 naming the list, or the field.
func CheckBounds(field string, raw []byte) error {
	o := valueBounds.Check(raw)
	if o == nil {
		return nil
	}
	if field == "" {
		field = "body"
	}
	if o.Values {
		return Invalid(field, fmt.Sprintf("must have at most %d values in all", MaxValues)).With("max_values", MaxValues)
	}
	switch {
	case o.Path == "":
	case field == "body":
		field = o.Path
	case o.Path[0] == '[':
		field += o.Path
	default:
		field += "." + o.Path
	}
	return Invalid(field, fmt.Sprintf("must have at most %d entries", MaxListEntries)).With("max_entries", MaxListEntries)
}
