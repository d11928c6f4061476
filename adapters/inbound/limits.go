package inbound

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/switchboard-ai/switchboard/adapters/internal/jsonenc"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/chat"
)

// Limits are what a body of one wire format may hold, counted on its bytes before it is decoded (Check): a decoder
// holds what it reads (encoding/json makes a struct for every item of a list of them and grows the list by
// doubling, a map or a slice for every {} and [] it reads into an any), so that a body of the shortest items costs
// many times its size before a bound checked on what was decoded can refuse it. Each wire format has its own,
// made once (NewLimits); the pass over the bytes is the same for all of them.
//
// The pass reads the body with jsonenc.Scanner, which allocates nothing but for a key with escapes: encoding/json's
// Decoder.Token, the standard library's way to read JSON without decoding it whole, allocates every token it reads
// (123 for a typical chat body, 49,000 for one of 1,000 messages) and took 9 to 15 times as long (BenchmarkLimits).
type Limits struct {
	// fields bounds the body's members, as given (a key given twice counts twice); 0 is none.
	fields int
	root   *node
	// totals is how many paths have a Total: the counters a pass keeps.
	totals int
}

// Limit bounds the value at a path of a body (see NewLimits).
type Limit struct {
	// Items bounds one list at the path, and Total the items of all the lists at the path together (a list item
	// of a list of lists has many); 0 is none.
	Items, Total int
	// Refuse is the refusal of the list at path (as the body names it: messages[3].content) past Items, or, total
	// set, of the one whose items take the lists past Total.
	Refuse func(path string, total bool) error
	// Free holds the value at the path, of any shape, to what a decoder of free-form values may hold
	// (domain.MaxListEntries entries in each of its lists and objects, domain.MaxValues values in all): a
	// refusal names the list or object past the first, and the value itself past the second.
	Free bool
}

// node is a path's place in a body: the limit of its value, and the paths below it, through an object's members
// or a list's items.
type node struct {
	limit   *Limit
	total   int // the index of its counter, when its limit has a Total
	members []member
	items   *node
}

type member struct {
	name string
	node *node
}

// NewLimits makes the limits of a wire format: at most fields members in a body (0: no bound), and each path's
// limit. A path names members by their keys, joined by dots, and a list's items by []: "messages",
// "messages[].content", "provider"; "" is the body itself. Keys below the body's own members match as encoding/json
// matches a struct's fields, without regard to case, as the decoder reads them into structs; the body's own
// exactly, as it reads them into a map.
func NewLimits(fields int, paths map[string]Limit) *Limits {
	l := &Limits{fields: fields, root: &node{}}
	for path, limit := range paths {
		n := l.root
		for path != "" {
			var step string
			if rest, ok := strings.CutPrefix(path, "[]"); ok {
				if n.items == nil {
					n.items = &node{}
				}
				n, path = n.items, strings.TrimPrefix(rest, ".")
				continue
			}
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			step, path = path[:end], strings.TrimPrefix(path[end:], ".")
			n = n.member(step)
		}
		limit := limit
		n.limit = &limit
		if limit.Total > 0 {
			if l.totals == maxTotals {
				panic("inbound: more than maxTotals limits with a Total")
			}
			n.total = l.totals
			l.totals++
		}
	}
	return l
}

// member is the node of the member named name, made when it is new.
func (n *node) member(name string) *node {
	for _, m := range n.members {
		if m.name == name {
			return m.node
		}
	}
	m := member{name: name, node: &node{}}
	n.members = append(n.members, m)
	return m.node
}

// find is the node of the member whose key is key, nil when the limits name none: a member of the body itself
// (top) by its exact key, as the body's members are decoded into a map, any other as encoding/json matches a
// struct's fields, without regard to case.
func (n *node) find(key []byte, top bool) *node {
	for _, m := range n.members {
		if top && string(key) == m.name || !top && jsonenc.Is(key, m.name) {
			return m.node
		}
	}
	return nil
}

// Check reads body and returns the refusal of the first list or object past the limits (a 400 naming it), nil
// when none is. A body that is not JSON is not refused here: its decoder says why, in its words.
func (l *Limits) Check(body []byte) error {
	c := pass{s: jsonenc.NewScanner(body)}
	err := c.body(l)
	o, ok := err.(*overflow)
	if !ok {
		return nil
	}
	return o.refusal()
}

// CheckFree holds raw, a value decoded whole into free-form values, to the bounds of a Free limit, and each of its
// strings and object keys to spell its text exactly (jsonenc.Intact: UTF-8, no \u escape of half a surrogate pair),
// as encoding/json would decode either into U+FFFD and no later check could tell: field names it in the refusals
// ("" for a whole body, named "body"; a key by its object's path and "(a key)").
func CheckFree(field string, raw []byte) error {
	c := pass{s: jsonenc.NewScanner(raw), text: true}
	o, ok := c.free().(*overflow)
	if !ok {
		return nil
	}
	if o.values {
		o.at = field
	} else if field != "" {
		o.path = prefix(o.path, []byte(field), 0)
	}
	return o.refusal()
}

// maxTotals bounds the limits with a Total a wire format may have: the counters a pass keeps, in place.
const maxTotals = 4

// pass is one Check: the scanner over the body, and the counters of the limits with a Total.
type pass struct {
	s      jsonenc.Scanner
	counts [maxTotals]int
	// values counts the values within the free value being read.
	values int
	// text refuses a string or a key of a free value that is not intact (CheckFree).
	text bool
}

// overflow unwinds a pass past a limit: its path is written from the inside out as it unwinds.
type overflow struct {
	path   string
	limit  *Limit // nil for the body's fields (fields is their bound), or a free value's bounds
	total  bool
	fields int
	// free is an overflow within a free value: past domain.MaxListEntries, or past domain.MaxValues (values),
	// where at names the free value.
	free, values bool
	at           string
	// text is a string, or a key (path "(a key)" within its object), that is not intact.
	text bool
}

func (*overflow) Error() string { return "past the limits" }

// in prefixes the path with the step to where it is: a member's key or a list's index.
func (o *overflow) in(key []byte, index int) {
	if o.values {
		o.at = prefix(o.at, key, index)
		return
	}
	o.path = prefix(o.path, key, index)
}

func prefix(path string, key []byte, index int) string {
	switch {
	case key == nil && (path == "" || path[0] == '['):
		return "[" + strconv.Itoa(index) + "]" + path
	case key == nil:
		return "[" + strconv.Itoa(index) + "]." + path
	case path == "" || path[0] == '[':
		return string(key) + path
	}
	return string(key) + "." + path
}

// refusal is the 400 for the overflow.
func (o *overflow) refusal() error {
	switch {
	case o.text:
		field := o.path
		if field == "" {
			field = "body"
		}
		return domain.Invalid(field, "must be valid UTF-8")
	case o.values:
		field := o.at
		if field == "" {
			field = "body"
		}
		return domain.Invalid(field, fmt.Sprintf("must have at most %d values in all", domain.MaxValues)).With("max_values", domain.MaxValues)
	case o.free:
		field := o.path
		if field == "" {
			field = "body"
		}
		return domain.Invalid(field, fmt.Sprintf("must have at most %d entries", domain.MaxListEntries)).
			With("max_entries", domain.MaxListEntries)
	case o.limit == nil:
		return domain.Invalid("body", fmt.Sprintf("must have at most %d fields", o.fields)).With("max_fields", o.fields)
	}
	return o.limit.Refuse(o.path, o.total)
}

// body reads the body, an object, its members counted and each read along its node.
func (c *pass) body(l *Limits) error {
	if l.root.limit != nil && l.root.limit.Free {
		return c.free()
	}
	n := 0
	return c.s.Object(func(key []byte) error {
		if n++; l.fields > 0 && n > l.fields {
			return &overflow{fields: l.fields}
		}
		next := l.root.find(key, true)
		if next == nil {
			return c.s.Skip()
		}
		err := c.value(next)
		if o, ok := err.(*overflow); ok {
			o.in(key, 0)
		}
		return err
	})
}

// value reads the value at n.
func (c *pass) value(n *node) error {
	if n.limit != nil && n.limit.Free {
		c.values = 0
		return c.free()
	}
	switch c.s.Peek() {
	case '[':
		return c.s.Array(func(i int) error {
			if lim := n.limit; lim != nil {
				if lim.Items > 0 && i >= lim.Items {
					return &overflow{limit: lim}
				}
				if lim.Total > 0 {
					if c.counts[n.total]++; c.counts[n.total] > lim.Total {
						return &overflow{limit: lim, total: true}
					}
				}
			}
			if n.items == nil {
				return c.s.Skip()
			}
			err := c.value(n.items)
			if o, ok := err.(*overflow); ok {
				o.in(nil, i)
			}
			return err
		})
	case '{':
		if len(n.members) == 0 {
			break
		}
		return c.s.Object(func(key []byte) error {
			next := n.find(key, false)
			if next == nil {
				return c.s.Skip()
			}
			err := c.value(next)
			if o, ok := err.(*overflow); ok {
				o.in(key, 0)
			}
			return err
		})
	}
	return c.s.Skip()
}

// free reads a free value, each of its lists and objects held to domain.MaxListEntries entries (an object's key
// given twice counted twice) and the values within it to domain.MaxValues; with text, each string and key intact.
func (c *pass) free() error {
	entry := func(n int) error {
		if n > domain.MaxListEntries {
			return &overflow{free: true}
		}
		if c.values++; c.values > domain.MaxValues {
			return &overflow{free: true, values: true}
		}
		return nil
	}
	switch c.s.Peek() {
	case '{':
		n := 0
		return c.s.Object(func(key []byte) error {
			n++
			if err := entry(n); err != nil {
				return err
			}
			if c.text && !jsonenc.Intact(c.s.RawKey()) {
				return &overflow{text: true, path: "(a key)"}
			}
			err := c.free()
			if o, ok := err.(*overflow); ok && !o.values {
				o.in(key, 0)
			}
			return err
		})
	case '[':
		return c.s.Array(func(i int) error {
			if err := entry(i + 1); err != nil {
				return err
			}
			err := c.free()
			if o, ok := err.(*overflow); ok && !o.values {
				o.in(nil, i)
			}
			return err
		})
	case '"':
		if !c.text {
			break
		}
		v, err := c.s.Value()
		if err == nil && !jsonenc.Intact(v[1:len(v)-1]) {
			return &overflow{text: true}
		}
		return err
	}
	return c.s.Skip()
}

// The limits every wire format's conversation shares, by the domain's bounds: its messages, each message's content
// (its parts, and theirs in all), its tools, its stop sequences (under field), its models list, and the provider
// object, free-form.
var (
	MessagesLimit = Limit{Items: chat.MaxMessages, Refuse: func(string, bool) error { return chat.TooManyMessages("messages") }}
	ContentLimit  = Limit{Items: chat.MaxParts, Total: chat.MaxTotalParts, Refuse: func(path string, total bool) error {
		if total {
			return chat.TooManyParts(path)
		}
		return chat.BadContent(path)
	}}
	ToolsLimit    = Limit{Items: chat.MaxTools, Refuse: func(string, bool) error { return chat.TooManyTools("tools") }}
	ModelsLimit   = Limit{Items: chat.MaxModels, Refuse: func(string, bool) error { return chat.TooManyModels("models") }}
	ProviderLimit = Limit{Free: true}
)

// StopsLimit bounds the stop sequences, under field (stop, stop_sequences).
func StopsLimit(field string) Limit {
	return Limit{Items: chat.MaxStops, Refuse: func(string, bool) error { return chat.TooManyStops(field) }}
}

// Decode holds body to the limits (Check), then decodes its fields (DecodeFields).
func (l *Limits) Decode(body []byte) (Fields, error) {
	if err := l.Check(body); err != nil {
		return nil, err
	}
	return DecodeFields(body)
}
