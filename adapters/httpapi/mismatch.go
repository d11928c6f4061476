package httpapi

import (
	"bytes"
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// mismatch is a value of a request body that the field it is decoded into cannot hold.
type mismatch struct {
	path string // entries by index and members by key: content_filters[1].action
	want string // what the field must be: "a string"
	got  string // what the value is: "a boolean", or the number itself
}

// findMismatch finds the value of body that encoding/json refused to decode into t: the first, in order of keys
// and then of entries, whose path is field (encoding/json's name for it, which has no indexes) once its indexes
// are dropped, or else the first of all. encoding/json names neither the entry of a list nor, for a value it
// could not take, anything but its own Go type names; this walk follows t as encoding/json does, and says both
// in the API's words. It reports false when it finds none.
func findMismatch(body []byte, t reflect.Type, field string) (mismatch, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return mismatch{}, false
	}
	var all []mismatch
	walkMismatches("", v, t, func(m mismatch) { all = append(all, m) })
	if len(all) == 0 {
		return mismatch{}, false
	}
	if i := slices.IndexFunc(all, func(m mismatch) bool { return indexes.ReplaceAllString(m.path, "") == field }); i >= 0 {
		return all[i], true
	}
	return all[0], true
}

var indexes = regexp.MustCompile(`\[\d+\]`)

// walkMismatches calls found with every value of v, at path, that a value of type t cannot hold. Types with their
// own decoding (usd, voice) are judged by it; opt[T] as T, null as anything, as encoding/json does.
func walkMismatches(path string, v any, t reflect.Type, found func(mismatch)) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if v == nil || t.Kind() == reflect.Interface {
		return
	}
	if o, ok := reflect.New(t).Interface().(interface{ valueType() reflect.Type }); ok {
		walkMismatches(path, v, o.valueType(), found)
		return
	}
	if u, ok := reflect.New(t).Interface().(json.Unmarshaler); ok {
		raw, _ := json.Marshal(v)
		if u.UnmarshalJSON(raw) != nil {
			found(mismatch{path, jsonTypeName(t), describe(v, true)})
		}
		return
	}
	fits, numeric := false, false
	switch t.Kind() {
	case reflect.String:
		_, isNumber := v.(json.Number)
		_, isString := v.(string)
		fits = isString || t == jsonNumber && isNumber
	case reflect.Bool:
		_, fits = v.(bool)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		_, err := strconv.ParseInt(string(n), 10, t.Bits())
		fits, numeric = ok && err == nil, true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := v.(json.Number)
		_, err := strconv.ParseUint(string(n), 10, t.Bits())
		fits, numeric = ok && err == nil, true
	case reflect.Float32, reflect.Float64:
		n, ok := v.(json.Number)
		_, err := strconv.ParseFloat(string(n), t.Bits())
		fits, numeric = ok && err == nil, true
	case reflect.Slice, reflect.Array:
		var list []any
		if list, fits = v.([]any); fits {
			for i, e := range list {
				walkMismatches(path+"["+strconv.Itoa(i)+"]", e, t.Elem(), found)
			}
		}
	case reflect.Map:
		var obj map[string]any
		if obj, fits = v.(map[string]any); fits && t.Key().Kind() == reflect.String {
			for _, k := range sortedKeys(obj) {
				walkMismatches(join(path, k), obj[k], t.Elem(), found)
			}
		}
	case reflect.Struct:
		var obj map[string]any
		if obj, fits = v.(map[string]any); fits {
			for _, k := range sortedKeys(obj) {
				if f, ok := fieldOf(t, k); ok {
					walkMismatches(join(path, k), obj[k], f.Type, found)
				}
			}
		}
	default:
		fits = true // no request field is of another kind
	}
	if !fits {
		found(mismatch{path, jsonTypeName(t), describe(v, numeric)})
	}
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

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// maxQuotedNumber bounds the numbers a message quotes; a longer one is described by its length.
const maxQuotedNumber = 32

// describe says what a decoded JSON value is: its type, or, with quoteNumber (where a number was due but not this
// one), the number itself.
func describe(v any, quoteNumber bool) string {
	switch v := v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		if !quoteNumber {
			return "a number"
		}
		if len(v) > maxQuotedNumber {
			return "a number of " + strconv.Itoa(len(v)) + " characters"
		}
		return string(v)
	case []any:
		return "an array"
	}
	return "an object"
}
