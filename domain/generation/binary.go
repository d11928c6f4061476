package generation

import (
	"encoding/binary"
	"errors"
	"slices"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/guardrail"
)

// AppendBinary appends e's binary encoding to b, without reflection: every field in the order the types declare
// them; a string as its length (a uvarint) and its bytes, kept as they are; an integer or a duration as a varint;
// a bool as a byte 0 or 1; a time as its instant and its zone's offset (see appendTime); a pointer or a slice as a
// uvarint that is 0 for nil and otherwise its length plus one (1 for a pointer), followed by what it points to or
// its items. A field added to these types needs a new encoding: the spool keeps what it wrote under a version of
// its own (see app.Recorder), and UnmarshalBinary reads this one only.
func (e Entry) AppendBinary(b []byte) []byte {
	b = slices.Grow(b, e.sizeHint())
	b = appendRecord(b, &e.Record)
	if b = appendBool(b, e.Content != nil); e.Content != nil {
		b = appendContent(b, e.Content)
	}
	b = appendCount(b, len(e.Holds), e.Holds == nil)
	for _, h := range e.Holds {
		b = appendString(b, h.ID)
		b = appendString(b, h.GuardrailID)
		b = appendTime(b, h.Window)
		b = binary.AppendVarint(b, int64(h.Amount))
	}
	return b
}

// sizeHint is about the size of e's encoding: its texts of any length, and room for the rest of a usual entry.
func (e *Entry) sizeHint() int {
	n := 512
	if c := e.Content; c != nil {
		for _, m := range c.Input.Messages {
			n += len(m.Content) + 8
		}
		for _, p := range []*string{c.Input.Prompt, c.Output.Reasoning} {
			if p != nil {
				n += len(*p)
			}
		}
		n += len(c.Output.Completion)
	}
	return n
}

func appendRecord(b []byte, r *Record) []byte {
	for _, s := range [...]string{r.ID, r.RequestID, r.UpstreamID, string(r.APIType), r.WorkspaceID, r.KeyHash} {
		b = appendString(b, s)
	}
	b = appendOptString(b, r.UserID)
	b = appendString(b, r.Model)
	b = appendString(b, r.ProviderName)
	b = appendOptString(b, r.PresetID)
	b = appendOptString(b, r.Router)
	for _, s := range [...]string{r.Origin, r.Referer, r.UserAgent, r.ExternalUser} {
		b = appendString(b, s)
	}
	b = appendOptString(b, r.SessionID)
	b = binary.AppendVarint(b, int64(r.Status))
	b = appendBool(appendBool(appendBool(b, r.Streamed), r.Cancelled), r.BYOK)
	b = appendString(b, r.FinishReason)
	b = appendString(b, r.NativeFinishReason)
	c := &r.Counts
	for _, v := range [...]int64{int64(r.Latency), int64(r.GenerationTime), int64(r.ModerationLatency),
		c.TokensPrompt, c.TokensCompletion, c.NativeTokensPrompt, c.NativeTokensCompletion, c.NativeTokensCompletionImages,
		c.NativeTokensReasoning, c.NativeTokensCached, c.NumInputAudioPrompt, c.NumMediaPrompt, c.NumMediaCompletion,
		c.NumSearchResults, c.NumFetches, int64(r.TotalCost), int64(r.UpstreamCost)} {
		b = binary.AppendVarint(b, v)
	}
	if b = appendBool(b, r.CacheDiscount != nil); r.CacheDiscount != nil {
		b = binary.AppendVarint(b, int64(*r.CacheDiscount))
	}
	b = appendString(b, r.DataRegion)
	b = appendOptString(b, r.ServiceTier)
	b = appendOptString(b, r.WebSearchEngine)
	b = appendAttempts(b, r.Attempts)
	b = appendCount(b, len(r.Flags), r.Flags == nil)
	for _, f := range r.Flags {
		b = appendString(b, f)
	}
	return appendTime(b, r.CreatedAt)
}

func appendContent(b []byte, c *Content) []byte {
	b = appendCount(b, len(c.Input.Messages), c.Input.Messages == nil)
	for _, m := range c.Input.Messages {
		b = appendString(appendString(b, m.Role), m.Content)
	}
	b = appendOptString(b, c.Input.Prompt)
	b = appendString(b, c.Output.Completion)
	b = appendOptString(b, c.Output.Reasoning)
	if b = appendBool(b, c.Failure != nil); c.Failure != nil {
		f := c.Failure
		b = appendString(b, f.Message)
		b = binary.AppendVarint(b, int64(f.Status))
		b = appendOptString(b, f.ProviderName)
		b = appendOptString(b, f.Raw)
		b = appendAttempts(b, f.Previous)
	}
	return b
}

func appendAttempts(b []byte, as []Attempt) []byte {
	b = appendCount(b, len(as), as == nil)
	for i := range as {
		a := &as[i]
		for _, s := range [...]string{a.ProviderName, a.EndpointID, a.UpstreamModel, a.UpstreamID} {
			b = appendString(b, s)
		}
		b = binary.AppendVarint(b, int64(a.Status))
		b = binary.AppendVarint(b, int64(a.Latency))
		b = appendBool(b, a.BYOK)
		b = appendString(b, a.Error)
		b = appendString(b, a.Raw)
	}
	return b
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendOptString(b []byte, p *string) []byte {
	if p == nil {
		return append(b, 0)
	}
	return append(binary.AppendUvarint(b, uint64(len(*p))+1), *p...)
}

// appendCount is a slice's length plus one, or 0 for nil.
func appendCount(b []byte, n int, isNil bool) []byte {
	if isNil {
		return append(b, 0)
	}
	return binary.AppendUvarint(b, uint64(n)+1)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// appendTime is the instant (Unix seconds and nanoseconds) and whether it is in UTC, and if not its zone's offset in
// seconds; it is read back in UTC or in a fixed zone of that offset. time.Time's own AppendBinary is not used: it
// reads a negative offset with seconds (LMT -09:30:17) back as another (-09:26:01), and refuses an offset of -1
// minute.
func appendTime(b []byte, t time.Time) []byte {
	b = binary.AppendVarint(b, t.Unix())
	b = binary.AppendUvarint(b, uint64(t.Nanosecond()))
	if b = appendBool(b, t.Location() != time.UTC); t.Location() != time.UTC {
		_, offset := t.Zone()
		b = binary.AppendVarint(b, int64(offset))
	}
	return b
}

var errEntryEncoding = errors.New("malformed binary generation entry")

// UnmarshalBinary reads what AppendBinary wrote, all of data and nothing past it. A malformed or truncated
// encoding is an error; whatever data holds, what it allocates is at most some 16 times its size.
func (e *Entry) UnmarshalBinary(data []byte) error {
	d := decoder{b: data}
	var out Entry
	d.record(&out.Record)
	if d.bool() {
		out.Content = d.content()
	}
	if n, ok := d.count(6); ok { // two strings, a time of three varints and a varint
		out.Holds = make([]guardrail.Hold, n)
		for i := range out.Holds {
			h := &out.Holds[i]
			h.ID, h.GuardrailID, h.Window, h.Amount = d.string(), d.string(), d.time(), domain.Micros(d.varint())
		}
	}
	if d.err == nil && len(d.b) > 0 {
		d.err = errEntryEncoding
	}
	if d.err != nil {
		return d.err
	}
	*e = out
	return nil
}

// decoder reads an encoding front to back; after its first error, it reads zero values.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) record(r *Record) {
	r.ID, r.RequestID, r.UpstreamID, r.APIType = d.string(), d.string(), d.string(), APIType(d.string())
	r.WorkspaceID, r.KeyHash, r.UserID = d.string(), d.string(), d.optString()
	r.Model, r.ProviderName, r.PresetID, r.Router = d.string(), d.string(), d.optString(), d.optString()
	r.Origin, r.Referer, r.UserAgent, r.ExternalUser = d.string(), d.string(), d.string(), d.string()
	r.SessionID, r.Status = d.optString(), int(d.varint())
	r.Streamed, r.Cancelled, r.BYOK = d.bool(), d.bool(), d.bool()
	r.FinishReason, r.NativeFinishReason = d.string(), d.string()
	r.Latency, r.GenerationTime, r.ModerationLatency = time.Duration(d.varint()), time.Duration(d.varint()), time.Duration(d.varint())
	c := &r.Counts
	for _, p := range [...]*int64{&c.TokensPrompt, &c.TokensCompletion, &c.NativeTokensPrompt, &c.NativeTokensCompletion,
		&c.NativeTokensCompletionImages, &c.NativeTokensReasoning, &c.NativeTokensCached, &c.NumInputAudioPrompt,
		&c.NumMediaPrompt, &c.NumMediaCompletion, &c.NumSearchResults, &c.NumFetches} {
		*p = d.varint()
	}
	r.TotalCost, r.UpstreamCost = domain.Micros(d.varint()), domain.Micros(d.varint())
	if d.bool() {
		v := domain.Micros(d.varint())
		r.CacheDiscount = &v
	}
	r.DataRegion, r.ServiceTier, r.WebSearchEngine = d.string(), d.optString(), d.optString()
	r.Attempts = d.attempts()
	if n, ok := d.count(1); ok {
		r.Flags = make([]string, n)
		for i := range r.Flags {
			r.Flags[i] = d.string()
		}
	}
	r.CreatedAt = d.time()
}

func (d *decoder) content() *Content {
	var c Content
	if n, ok := d.count(2); ok {
		c.Input.Messages = make([]Message, n)
		for i := range c.Input.Messages {
			c.Input.Messages[i] = Message{Role: d.string(), Content: d.string()}
		}
	}
	c.Input.Prompt = d.optString()
	c.Output = Output{Completion: d.string(), Reasoning: d.optString()}
	if d.bool() {
		c.Failure = &Failure{Message: d.string(), Status: int(d.varint()), ProviderName: d.optString(), Raw: d.optString(),
			Previous: d.attempts()}
	}
	return &c
}

func (d *decoder) attempts() []Attempt {
	n, ok := d.count(9) // six strings, two varints and a bool
	if !ok {
		return nil
	}
	as := make([]Attempt, n)
	for i := range as {
		a := &as[i]
		a.ProviderName, a.EndpointID, a.UpstreamModel, a.UpstreamID = d.string(), d.string(), d.string(), d.string()
		a.Status, a.Latency, a.BYOK = int(d.varint()), time.Duration(d.varint()), d.bool()
		a.Error, a.Raw = d.string(), d.string()
	}
	return as
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = errEntryEncoding
	}
	d.b = nil
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

// bytes takes the next n bytes.
func (d *decoder) bytes(n uint64) []byte {
	if n > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	b := d.b[:n]
	d.b = d.b[n:]
	return b
}

func (d *decoder) string() string { return string(d.bytes(d.uvarint())) }

func (d *decoder) optString() *string {
	n := d.uvarint()
	if n == 0 {
		return nil
	}
	s := string(d.bytes(n - 1))
	return &s
}

// count is a slice's length, and false for a nil slice. Each item takes at least least bytes: a length the bytes
// left cannot hold is an error, before anything is allocated for it.
func (d *decoder) count(least int) (int, bool) {
	n := d.uvarint()
	if n == 0 || d.err != nil {
		return 0, false
	}
	if n-1 > uint64(len(d.b)/least) {
		d.fail()
		return 0, false
	}
	return int(n - 1), true
}

func (d *decoder) bool() bool {
	b := d.bytes(1)
	if len(b) == 0 {
		return false
	}
	if b[0] > 1 {
		d.fail()
	}
	return b[0] == 1
}

func (d *decoder) time() time.Time {
	sec, nsec, zoned := d.varint(), d.uvarint(), d.bool()
	if nsec >= 1e9 {
		d.fail()
	}
	var offset int64
	if zoned {
		offset = d.varint()
	}
	if d.err != nil {
		return time.Time{}
	}
	t := time.Unix(sec, int64(nsec))
	if !zoned {
		return t.UTC()
	}
	return t.In(time.FixedZone("", int(offset)))
}
