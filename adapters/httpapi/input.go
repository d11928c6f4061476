package httpapi

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/domain/guardrail"
	"github.com/switchboard-ai/switchboard/domain/video"
)

// What a caller sends is checked by its shape at the edge, before any handler or store reads it: an id in the
// path or query by its format, so that a malformed id is answered exactly as a missing one (it names nothing);
// every other query value and every string of a management body as text a database can store; every list of a
// management body against one bound.

// pathIDs is the format of each path parameter that is an id, and the answer when it is malformed. The preset
// :slug and :version parameters are checked where they are parsed.
var pathIDs = map[string]struct {
	valid   func(string) bool
	missing error
}{
	"hash":  {isKeyHash, account.ErrKeyNotFound},
	"id":    {isUUID, guardrail.ErrNotFound}, // guardrails are the only :id
	"jobId": {isVideoJobID, video.ErrNotFound},
	// a workspace is named by its id or its slug
	"workspace": {func(s string) bool { return isUUID(s) || domain.ValidateSlug("", s) == nil }, account.ErrNoWorkspace},
}

// queryIDs is the same for query parameters that are ids (an empty one is the handler's to judge).
var queryIDs = map[string]struct {
	valid   func(string) bool
	missing error
}{
	"id":           {isGenerationID, generation.ErrNotFound}, // GET /generation and /generation/content
	"workspace_id": {isUUID, account.ErrWorkspaceNotFound},
}

// checkRequest admits the path and query of a routed request.
func checkRequest(c *gin.Context) error {
	for _, p := range c.Params {
		if f, ok := pathIDs[p.Key]; ok && !f.valid(p.Value) {
			return f.missing
		}
	}
	if c.Request.URL.RawQuery == "" {
		return nil // most calls: no query to parse
	}
	for name, values := range c.Request.URL.Query() {
		if err := domain.CheckText("query parameter names", name); err != nil {
			return err
		}
		for _, v := range values {
			if f, ok := queryIDs[name]; ok && v != "" && !f.valid(v) {
				return f.missing
			}
			if err := domain.CheckText(name, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// isKeyHash: a key's hash is 64 lowercase hexadecimal digits (account.HashSecret).
func isKeyHash(s string) bool { return len(s) == 64 && hexDigits(s, false) }

// isUUID: workspace and guardrail ids are UUIDs in their canonical 8-4-4-4-12 form.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if s[i] != '-' {
				return false
			}
		} else if !hexDigits(s[i:i+1], true) {
			return false
		}
	}
	return true
}

func hexDigits(s string, upper bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || upper && c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// maxIDLength bounds generation and video job ids: gen-<unix seconds>-<32 hex> is 47 characters.
const maxIDLength = 128

// isGenerationID: gen-, then letters, digits and hyphens.
func isGenerationID(s string) bool { return prefixedID(s, "gen-") }

// isVideoJobID: gen-vid-, then letters, digits and hyphens.
func isVideoJobID(s string) bool { return prefixedID(s, "gen-vid-") }

func prefixedID(s, prefix string) bool {
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok || rest == "" || len(s) > maxIDLength {
		return false
	}
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-') {
			return false
		}
	}
	return true
}

// bindFields is bindJSON for management bodies: every string (object keys included) must be text a database can
// store, or it is a 400 naming the field.
func bindFields(c *gin.Context, dst any) error {
	if err := bindJSON(c, dst); err != nil {
		return err
	}
	return checkFields("", reflect.ValueOf(dst))
}

// checkFields walks a decoded body: struct fields are named by their json tag (a field without one, such as
// opt's value, keeps its parent's name), list entries by index, object entries by key.
func checkFields(field string, v reflect.Value) error {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return checkFields(field, v.Elem())
	case reflect.String:
		if v.Type() == jsonNumber {
			return domain.CheckNumber(field, v.String())
		}
		return domain.CheckText(field, v.String())
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			name := field
			if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); tag != "" && tag != "-" {
				name = join(field, tag)
			}
			if err := checkFields(name, v.Field(i)); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			if err := checkFields(field+"["+strconv.Itoa(i)+"]", v.Index(i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			k := it.Key()
			if k.Kind() != reflect.String {
				continue
			}
			if err := domain.CheckText(join(field, "(a key)"), k.String()); err != nil {
				return err
			}
			if err := checkFields(join(field, k.String()), it.Value()); err != nil {
				return err
			}
		}
	}
	return nil
}

var jsonNumber = reflect.TypeFor[json.Number]()

func join(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}
