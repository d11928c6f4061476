package domain

// MaxListEntries bounds every list of a request body that is decoded whole (and every object's number of keys, a
// key given twice counted twice), and MaxValues the values in it in all, at every depth: free-form objects (a
// preset's configuration, provider.options) could otherwise nest lists of 1,000 lists. Bulk assignments stay far
// below the databases' limits on statement parameters, and a guardrail with every list full holds some 14,000
// values. The HTTP adapter counts them on a body's bytes, before it is decoded: decoded first, a 10 MiB body of the
// shortest list items ({} content filters, "" ids, [] in provider.options) cost 40 to 150 times its size in memory
// before it was refused.
const (
	MaxListEntries = 1000
	MaxValues      = 20_000
)
