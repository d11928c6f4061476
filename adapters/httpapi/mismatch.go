package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/switchboard-ai/switchboard/adapters/inbound"
)

// mismatch is a value of a request body that the field it is decoded into cannot hold.
type mismatch struct {
	path string // entries by index and members by key: content_filters[1].action
	want string // what the field must be: "a string"
	got  string // what the value is: "a boolean", or the number itself
}

// findMismatch finds the value of body that encoding/json refused to decode into t: the first in the body whose
// path is field (encoding/json's name for it, which has no indexes) once its indexes are dropped, or else the first
// of all. encoding/json names neither the entry of a list nor, for a value it could not take, anything but its own
// Go type names; this walk follows t as encoding/json does, and says both in the API's words. It reports false when
// it finds none. It reads the body as a stream and stops at the value it looks for: its work does not grow with
// the values it skips (fields the request does not have are read over, not decoded), nor with the wrong values
// after the one it names.
func findMismatch(body []byte, t reflect.Type, field string) (mismatch, bool) {
	w := mismatchWalk{dec: json.NewDecoder(bytes.NewReader(body)), body: body, field: field}
	w.dec.UseNumber()
	if w.walk("", t) != nil && !w.found {
		return mismatch{}, false
	}
	return w.first, w.found
}

var indexes = regexp.MustCompile(`\[\d+\]`)

var (
	valueTyper  = reflect.TypeFor[interface{ valueType() reflect.Type }]()
	unmarshaler = reflect.TypeFor[json.Unmarshaler]()
)

// errFound ends a walk at the mismatch it looks for.
var errFound = errors.New("found")

// mismatchWalk walks a body's first value along a type, noting the first mismatch and stopping at the one whose
// path is field.
type mismatchWalk struct {
	dec     *json.Decoder
	body    []byte
	field   string
	first   mismatch
	found   bool
	scratch json.RawMessage // each value read whole, in turn: one buffer for all
}

// note records a mismatch: errFound when it is the one looked for.
func (w *mismatchWalk) note(m mismatch) error {
	if !w.found {
		w.first, w.found = m, true
	}
	if indexes.ReplaceAllString(m.path, "") == w.field {
		w.first = m
		return errFound
	}
	return nil
}

// walk reads the next value, at path, and notes every part of it that a value of type t cannot hold. Types with
// their own decoding (usd, voice) are judged by it; opt[T] as T, null as anything, as encoding/json does.
func (w *mismatchWalk) walk(path string, t reflect.Type) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(valueTyper) {
		return w.walk(path, reflect.New(t).Interface().(interface{ valueType() reflect.Type }).valueType())
	}
	list := t.Kind() == reflect.Slice || t.Kind() == reflect.Array
	custom := reflect.PointerTo(t).Implements(unmarshaler)
	if !custom {
		switch next := w.next(); {
		case next == '[' && list:
			return w.entries(path, t)
		case next == '{' && (t.Kind() == reflect.Map || t.Kind() == reflect.Struct):
			return w.members(path, t)
		}
	}
	if err := w.dec.Decode(&w.scratch); err != nil {
		return err
	}
	v := w.scratch
	kind := valueKind(v)
	fits, numeric := true, false // no request field is of another kind
	if custom {
		fits = reflect.New(t).Interface().(json.Unmarshaler).UnmarshalJSON(v) == nil
		numeric = true
	} else {
		switch t.Kind() {
		case reflect.String:
			fits = kind == "string" || t == jsonNumber && kind == "number"
		case reflect.Bool:
			fits = kind == "bool"
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			_, err := strconv.ParseInt(string(v), 10, t.Bits())
			fits, numeric = kind == "number" && err == nil, true
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			_, err := strconv.ParseUint(string(v), 10, t.Bits())
			fits, numeric = kind == "number" && err == nil, true
		case reflect.Float32, reflect.Float64:
			_, err := strconv.ParseFloat(string(v), t.Bits())
			fits, numeric = kind == "number" && err == nil, true
		case reflect.Slice, reflect.Array, reflect.Map, reflect.Struct:
			fits = false // a list or an object was due, and this is not one
		}
	}
	if !fits && kind != "null" && t.Kind() != reflect.Interface {
		return w.note(mismatch{path, jsonTypeName(t), describe(v, numeric)})
	}
	return nil
}

// next is the first byte of the next value (0 at the end of the body): the decoder has read the body up to the
// separators and spaces before it.
func (w *mismatchWalk) next() byte {
	for _, c := range w.body[w.dec.InputOffset():] {
		switch c {
		case ' ', '\t', '\r', '\n', ':', ',':
		default:
			return c
		}
	}
	return 0
}

// entries walks a list's entries along t's.
func (w *mismatchWalk) entries(path string, t reflect.Type) error {
	if _, err := w.dec.Token(); err != nil {
		return err
	}
	for i := 0; w.dec.More(); i++ {
		if err := w.walk(path+"["+strconv.Itoa(i)+"]", t.Elem()); err != nil {
			return err
		}
	}
	_, err := w.dec.Token()
	return err
}

// members walks an object's members along t's fields (or, for a map, its values' type); a member t does not have
// is read over.
func (w *mismatchWalk) members(path string, t reflect.Type) error {
	if _, err := w.dec.Token(); err != nil {
		return err
	}
	for w.dec.More() {
		tok, err := w.dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		if elem, ok := memberType(t, key); ok {
			err = w.walk(join(path, key), elem)
		} else {
			err = w.dec.Decode(&w.scratch)
		}
		if err != nil {
			return err
		}
	}
	_, err := w.dec.Token()
	return err
}

// memberType is the type an object's member key is decoded into when the object is decoded into t: false when t
// has no such field, or is a map whose keys are not strings (whose values the walk does not judge).
func memberType(t reflect.Type, key string) (reflect.Type, bool) {
	if t.Kind() == reflect.Map {
		return t.Elem(), t.Key().Kind() == reflect.String
	}
	f, ok := fieldOf(t, key)
	return f.Type, ok
}

// fieldOf is the field of struct t that encoding/json decodes key into: the one named key by its json tag (or
// its Go name), else one whose name matches key but for case.
func fieldOf(t reflect.Type, key string) (reflect.StructField, bool) {
	var folded reflect.StructField
	found := false
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if name == key {
			return f, true
		}
		if !found && strings.EqualFold(name, key) {
			folded, found = f, true
		}
	}
	return folded, found
}

// maxQuotedNumber bounds the numbers a message quotes; a longer one is described by its length.
const maxQuotedNumber = 32

// describe says what a JSON value is: its type, or, with quoteNumber (where a number was due but not this one),
// the number itself.
func describe(v []byte, quoteNumber bool) string {
	kind := valueKind(v)
	switch {
	case kind != "number" || !quoteNumber:
		return inbound.KindName(kind)
	case len(v) > maxQuotedNumber:
		return "a number of " + strconv.Itoa(len(v)) + " characters"
	}
	return string(v)
}
