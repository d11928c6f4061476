package jsonenc

import "strconv"

// Bounds are the most one JSON value may hold, checked on its bytes before it is decoded: a decoder holds what it
// reads (encoding/json makes a map or a slice for every {} and [] it reads into an any, a struct for every item of
// a list of them, and grows each list by doubling), so that a body of the shortest items costs many times its
// size before a bound checked on what was decoded can refuse it. Entries bounds the items of any one array and
// the members of any one object (as given: a key given twice counts twice), Values the values within the value,
// at every depth; zero is no bound.
type Bounds struct{ Entries, Values int }

// Overflow is the first array or object past Bounds.Entries, which Path names from the value checked (a.b[2], ""
// for the value itself), or, with Values set, a value with more than Bounds.Values within it.
type Overflow struct {
	Path   string
	Values bool
}

// Check reads b, one JSON value, and returns the first array or object past the bounds, nil when none is. A b that
// is not JSON is not refused here: its decoder says why.
func (bd Bounds) Check(b []byte) *Overflow {
	c := boundsCheck{Bounds: bd, s: NewScanner(b)}
	if o, ok := c.value().(*overflow); ok {
		return &o.Overflow
	}
	return nil
}

// boundsCheck walks a value for Bounds.Check, counting the values within it.
type boundsCheck struct {
	Bounds
	s      Scanner
	values int
}

// overflow unwinds a walk past the bounds, its path written from the inside out as it goes.
type overflow struct{ Overflow }

func (*overflow) Error() string { return "past the bounds" }

func (c *boundsCheck) value() error {
	switch c.s.Peek() {
	case '{':
		n := 0
		return c.s.Object(func(key []byte) error {
			n++
			if err := c.entry(n); err != nil {
				return err
			}
			err := c.value()
			if o, ok := err.(*overflow); ok && !o.Values {
				if o.Path == "" || o.Path[0] == '[' {
					o.Path = string(key) + o.Path
				} else {
					o.Path = string(key) + "." + o.Path
				}
			}
			return err
		})
	case '[':
		return c.s.Array(func(i int) error {
			if err := c.entry(i + 1); err != nil {
				return err
			}
			err := c.value()
			if o, ok := err.(*overflow); ok && !o.Values {
				o.Path = "[" + strconv.Itoa(i) + "]" + o.Path
			}
			return err
		})
	}
	return c.s.Skip()
}

// entry counts the nth entry of an array or object, and the value it holds.
func (c *boundsCheck) entry(n int) error {
	if c.Entries > 0 && n > c.Entries {
		return &overflow{}
	}
	if c.values++; c.Values > 0 && c.values > c.Values {
		return &overflow{Overflow{Values: true}}
	}
	return nil
}
