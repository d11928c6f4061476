// Package inbound is what the wire formats of inference requests share (chat completions in chatcompletions;
// Anthropic's Messages and OpenAI's Responses next), each of which decodes a body into the domain's provider-neutral
// request: the body's members as encoding/json decodes them (Fields), its lists and objects counted on its bytes
// before they are decoded (Limits), a preset's configuration laid under them (Fields.Under), and the rule on a
// field named in another case (Fields.FirstSpelled).
package inbound

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/switchboard-ai/switchboard/adapters/internal/jsonenc"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/chat"
)

// Fields are a body's members, each value's bytes as the caller sent them, as encoding/json decodes an object into
// a map: a key exactly as sent (unescaped, invalid UTF-8 mended into U+FFFD), and of a key given twice, the last.
type Fields map[string]json.RawMessage

// ErrNoBody is the refusal of a body that is not a JSON object, or none.
var ErrNoBody = domain.E(domain.KindInvalid, "invalid_json", "request body: must be a JSON object")

// DecodeFields decodes body, one JSON object, into its fields. A body that is not one is a 400 that says where it
// is not (Malformed).
func DecodeFields(body []byte) (Fields, error) {
	var f Fields
	if err := json.Unmarshal(body, &f); err != nil {
		return nil, Malformed(err, body)
	}
	if f == nil {
		return nil, ErrNoBody
	}
	return f, nil
}

// Malformed turns encoding/json's error for body, which is no JSON or not of the type decoded, into the caller's
// 400 in the gateway's own words (encoding/json's name the gateway's Go types and its parser's states), and nil
// for any other error. The cause is kept for the log.
func Malformed(err error, body []byte) error {
	var (
		syntaxErr *json.SyntaxError
		typeErr   *json.UnmarshalTypeError
	)
	switch {
	case errors.Is(err, io.EOF) || len(bytes.TrimSpace(body)) == 0 && errors.As(err, &syntaxErr):
		return ErrNoBody
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &syntaxErr) && syntaxErr.Error() == errEnd:
		return domain.E(domain.KindInvalid, "invalid_json", "malformed JSON: unexpected end of the body").Wrap(err)
	case errors.As(err, &syntaxErr):
		return domain.E(domain.KindInvalid, "invalid_json",
			fmt.Sprintf("malformed JSON at byte %d: %s", syntaxErr.Offset, unexpected(body, syntaxErr.Offset))).Wrap(err)
	case errors.As(err, &typeErr) && typeErr.Field == "":
		return ErrNoBody.Wrap(err)
	}
	return nil
}

// errEnd is json.Unmarshal's error for a value cut short, which it gives as a syntax error (a json.Decoder gives
// io.ErrUnexpectedEOF).
var errEnd = func() string {
	var v any
	return json.Unmarshal([]byte("{"), &v).Error()
}()

// unexpected names the byte a syntax error at offset (bytes read, the bad one included) stopped at.
func unexpected(body []byte, offset int64) string {
	if offset < 1 || offset > int64(len(body)) {
		return "unexpected end of the body"
	}
	if b := body[offset-1]; b > ' ' && b < 0x7f {
		return fmt.Sprintf("unexpected '%c'", b)
	}
	return fmt.Sprintf("unexpected byte 0x%02x", body[offset-1])
}

// Present returns the field's value when the body has it and it is not null: a null field is an absent one.
func (f Fields) Present(name string) (json.RawMessage, bool) {
	raw, ok := f[name]
	return raw, ok && !IsNull(raw)
}

// IsNull reports a value that is null (or none).
func IsNull(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// Set sets the field to the string value, or removes it when value is empty.
func (f Fields) Set(name, value string) {
	if value == "" {
		delete(f, name)
		return
	}
	f[name], _ = Marshal(value)
}

// Marshal is json.Marshal without its escaping of <, > and & (\u003c, six bytes for one): a value the gateway lays
// into a body is sent on as these bytes, the same value to a JSON reader, and the body is held to a bound on its
// bytes, which should count what is sent rather than six times a preset's stored size.
func Marshal(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Under lays the fields over a preset version's configuration: each field the body sets (not null) wins, the others
// come from the configuration, but for those of the configuration that left says to leave out. The fields so made
// are held to the bounds a caller's own body is held to, as the configuration, saved from a body of its own, could
// make them about twice as many: at most maxFields fields, and at most maxBytes (the server's bound on a body) of
// fields' names and values. Past one it is a 400 naming the field that named the preset (chat.PresetRef.Within).
// It returns the bytes of the fields' names and values.
func (f *Fields) Under(config map[string]any, left func(key string) bool, ref chat.PresetRef, maxFields int,
	maxBytes int64) (int64, error) {
	out := make(Fields, len(*f)+len(config))
	for k, v := range config {
		if left(k) {
			continue
		}
		raw, err := Marshal(v)
		if err != nil {
			return 0, fmt.Errorf("preset %s: %s: %w", ref.Slug, k, err)
		}
		out[k] = raw
	}
	for k, v := range *f {
		if !IsNull(v) {
			out[k] = v
		}
	}
	if err := ref.Within("fields", int64(len(out)), int64(maxFields)); err != nil {
		return 0, err
	}
	size := out.Size()
	if err := ref.Within("bytes", size, maxBytes); err != nil {
		return 0, err
	}
	*f = out
	return size, nil
}

// Size is the bytes of the fields' names and values: what a body holding them is at least, so that a caller's own
// body within a bound on its bytes is within it by this count too.
func (f Fields) Size() int64 {
	var n int64
	for k, v := range f {
		n += int64(len(k) + len(v))
	}
	return n
}

// spelledAs returns the one of fields that key names otherwise (NamesField), and whether it names one: a field a
// wire format's decoder reads by its name alone, which an upstream that decodes otherwise would take key for. The
// fields are lower-case ASCII, so a key of lower-case ASCII without a NUL names one only by being it: the common key
// is settled by one pass over its bytes, where NamesField with each field took a quarter of a typical body's
// decoding.
func spelledAs(key string, fields ...[]string) (string, bool) {
	if plainKey(key) {
		return "", false
	}
	for _, names := range fields {
		for _, f := range names {
			if key != f && NamesField(key, f) {
				return f, true
			}
		}
	}
	return "", false
}

// spelled is the refusal of a key that names field otherwise, naming the key as sent.
func spelled(key, field string) error {
	return domain.Invalid(key, fmt.Sprintf("is %q spelled otherwise (in another case, or cut at a NUL), which an upstream may read "+
		"as %q: send it as %q", field, field, field))
}

// FirstSpelled is the refusal of the first key, in byte order, that names one of fields otherwise, nil when none
// does: of several, the same is named whatever order they came in.
func (f Fields) FirstSpelled(fields ...[]string) error { return f.FirstSpelledIn("", fields...) }

// FirstSpelledIn is FirstSpelled for the members of an object within a body, at path (messages[2].content[0]),
// which the refusal names the key under.
func (f Fields) FirstSpelledIn(path string, fields ...[]string) error {
	var first firstSpelled
	for k := range f {
		first.see(k, fields...)
	}
	return first.refusal(path)
}

// firstSpelled finds, of the keys it sees, the first in byte order that names a field otherwise.
type firstSpelled struct{ smuggled, as string }

func (s *firstSpelled) see(key string, fields ...[]string) {
	if name, ok := spelledAs(key, fields...); ok && (s.smuggled == "" || key < s.smuggled) {
		s.smuggled, s.as = key, name
	}
}

// refusal is the refusal of the key found (under path, when not ""), nil when none was.
func (s *firstSpelled) refusal(path string) error {
	if s.smuggled == "" {
		return nil
	}
	key := s.smuggled
	if path != "" {
		key = path + "." + key
	}
	return spelled(key, s.as)
}

// plainKey reports a key of ASCII without an upper-case letter or a NUL.
func plainKey(key string) bool {
	for i := 0; i < len(key); i++ {
		if c := key[i]; c == 0 || c >= 0x80 || 'A' <= c && c <= 'Z' {
			return false
		}
	}
	return true
}

// NamesField reports whether an upstream may read key as field, a name in lower-case ASCII: one that matches
// names without regard to case, by Unicode's simple folding as encoding/json does (ſ is s, the Kelvin sign k) or
// by each letter's upper or lower case as .NET's and Java's do (ı is I, İ is i), or one that reads a key as a C
// string, up to its first NUL ("model\u0000x" is model).
func NamesField(key, field string) bool {
	key, _, _ = strings.Cut(key, "\x00")
	i := 0
	for _, r := range key {
		if i == len(field) {
			return false
		}
		f := rune(field[i])
		if r != f && unicode.ToLower(r) != f && unicode.ToUpper(r) != unicode.ToUpper(f) {
			return false
		}
		i++
	}
	return i == len(field)
}

// Field decodes f[name] into dst when it is present and not null, naming the field when it holds another type.
func Field[T any](f Fields, name string, dst *T) error {
	raw, ok := f.Present(name)
	if !ok {
		return nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return domain.Invalid(name, "must be "+typeName(dst))
	}
	return nil
}

// Object decodes raw, the JSON value of field, into dst, a pointer to a struct: a value that is not an object is a
// 400 naming field (it must be what), a member of another type a 400 naming that member and the type it must be.
// The member is named by encoding/json's path, which has the members' names and not the arrays' indexes (a
// namespace's tools[1].name is tools.name): a caller who needs the index decodes an array's items one by one. A
// member that names one of dst's otherwise (TYPE for type, which encoding/json reads as type where an upstream
// reads only type) is a 400 naming it, before dst is decoded: the gateway and the upstream read the same members.
func Object(field string, raw json.RawMessage, dst any, what string) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return domain.Invalid(field, "must be "+what)
	}
	if err := spelledIn(raw, field, jsonNames(reflect.TypeOf(dst))); err != nil {
		return err
	}
	err := json.Unmarshal(raw, dst)
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te) && te.Field != "":
		got, _, _ := strings.Cut(te.Value, " ") // "number 1.5": the kind only
		return domain.Invalid(field+"."+te.Field, "must be "+TypeName(te.Type)+", not "+KindName(got))
	}
	return domain.Invalid(field, "must be "+what)
}

// spelledIn is FirstSpelledIn for raw, a JSON object at path, read by its keys without decoding its values; a
// malformed object ends the reading early, and its decoding says why.
func spelledIn(raw []byte, path string, fields []string) error {
	var first firstSpelled
	s := jsonenc.NewScanner(raw)
	_ = s.Object(func(key []byte) error {
		if !plainKey(string(key)) {
			first.see(string(key), fields)
		}
		_, err := s.Value()
		return err
	})
	return first.refusal(path)
}

// structNames holds jsonNames' answers by type.
var structNames sync.Map

// jsonNames are the JSON names of the fields of the struct t points to.
func jsonNames(t reflect.Type) []string {
	if names, ok := structNames.Load(t); ok {
		return names.([]string)
	}
	var names []string
	for f := range t.Elem().Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
			names = append(names, name)
		}
	}
	structNames.Store(t, names)
	return names
}

// TypeName is what a value decoded into t must be, in the API's words.
func TypeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		if t == reflect.TypeFor[json.Number]() {
			return "a number"
		}
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another type"
}

// KindName is a kind of JSON value, in encoding/json's word for it ("string", "number", "bool", "array", "object",
// "null"; UnmarshalTypeError.Value's first word), in the API's words.
func KindName(kind string) string {
	switch kind {
	case "bool":
		return "a boolean"
	case "object", "array":
		return "an " + kind
	}
	return "a " + kind
}

func typeName(dst any) string {
	switch dst.(type) {
	case *string:
		return "a string"
	case *bool, **bool:
		return "a boolean"
	case **int64, *int64:
		return "an integer"
	case **float64:
		return "a number"
	case *[]string:
		return "an array of strings"
	}
	return "an object"
}

// Preset is the preset the fields name (chat.PresetOf: their model and preset fields), nil when none; the
// reference leaves the fields (a model "m@preset/x" is then m), as every wire format names a preset alike.
func (f Fields) Preset() (*chat.PresetRef, error) {
	var model, named string
	if err := Field(f, "model", &model); err != nil {
		return nil, err
	}
	if err := Field(f, "preset", &named); err != nil {
		return nil, err
	}
	own, ref, err := chat.PresetOf(model, named)
	if err != nil || ref == nil {
		return nil, err
	}
	if own != model { // the model named it: the model it names with it, if any, stays
		f.Set("model", own)
	}
	delete(f, "preset")
	return ref, nil
}

// UnderPreset lays the fields over a preset version's configuration (Under): model and models are one setting,
// the models a call may use in order, so when the fields name any, the configuration's are left out.
func (f *Fields) UnderPreset(config map[string]any, ref chat.PresetRef, maxBytes int64) (int64, error) {
	_, model := f.Present("model")
	_, models := f.Present("models")
	own := model || models
	return f.Under(config, func(k string) bool { return own && (k == "model" || k == "models") }, ref, chat.MaxFields, maxBytes)
}

// Extra are the fields sent on as they came to an upstream of the body's own format (chat.Request.Extra): all but
// gateway, the fields the gateway answers to itself or rewrites, each held to being UTF-8 (domain.CheckOpaque: a
// string the gateway decodes itself is mended by encoding/json, but these go as their bytes). A field that names
// one of gateway or checked (the fields the gateway reads, then passes on) in another case ("MODEL", "Stream",
// "ſtream", whose ſ folds to s) or before a NUL is refused, naming it as sent: the gateway reads its fields by
// their names only, but an upstream that decodes as encoding/json does (Ollama, many proxies) matches keys without
// regard to case, and takes the last. Sent on, such a field would have the upstream serve another model than the
// one routed and priced, stream under a call that does not, or take a limit the call's budget was not reserved for.
func (f Fields) Extra(gateway, checked []string) (map[string]domain.Opaque, error) {
	if err := f.FirstSpelled(gateway, checked); err != nil {
		return nil, err
	}
	var out map[string]domain.Opaque
	for k, v := range f {
		if slices.Contains(gateway, k) {
			continue
		}
		if out == nil {
			out = make(map[string]domain.Opaque, len(f))
		}
		out[k] = domain.Opaque(v)
	}
	return out, nil
}

// CheckExtra holds the fields sent on as they came to being UTF-8 (domain.CheckOpaque).
func CheckExtra(extra map[string]domain.Opaque) error {
	for k, v := range extra {
		if err := domain.CheckOpaque(k, v); err != nil {
			return err
		}
	}
	return nil
}

// CheckConfig reads a preset's configuration as decode would read a request's fields, beside stand-ins for the
// fields a configuration never holds (base: a model and messages), and returns decode's refusal: a configuration
// no call could use is refused when it is saved rather than at every call made with it.
func CheckConfig(config map[string]any, base Fields, decode func(Fields) error) error {
	for k, v := range config {
		raw, err := Marshal(v)
		if err != nil {
			return domain.Invalid(k, "must be JSON")
		}
		base[k] = raw
	}
	return decode(base)
}

// ReadModels reads what every wire format's request begins with: the fields passed on as they came (Extra: all
// but gateway), then model and models.
func (f Fields) ReadModels(r *chat.Request, gateway, checked []string) error {
	var err error
	if r.Extra, err = f.Extra(gateway, checked); err != nil {
		return err
	}
	if err := Field(f, "model", &r.Model); err != nil {
		return err
	}
	return Field(f, "models", &r.Models)
}

// ReadCaller reads what every wire format's request ends with: the caller's ids (user, session_id) and the
// provider object (the options passed through, the routing preferences).
func (f Fields) ReadCaller(r *chat.Request) error {
	if err := Field(f, "user", &r.User); err != nil {
		return err
	}
	if err := Field(f, "session_id", &r.SessionID); err != nil {
		return err
	}
	raw, ok := f.Present("provider")
	if !ok {
		return nil
	}
	var err error
	r.Options, r.Route, err = Provider(raw)
	return err
}
