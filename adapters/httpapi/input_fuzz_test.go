package httpapi

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/switchboard-ai/switchboard/adapters/inbound/chatcompletions"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/guardrail"
	"github.com/switchboard-ai/switchboard/domain/preset"
	"github.com/switchboard-ai/switchboard/domain/speech"
)

// requestContext is a gin context holding a request with this target and body, as a route would see it.
func requestContext(target string, body []byte) *gin.Context {
	c, _ := gin.CreateTestContext(httptest.NewRecorder())
	c.Request = httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	c.Request.URL = &url.URL{Path: "/", RawQuery: target}
	return c
}

// refusal fails unless err is a 4xx the caller can act on: a bad field, bad JSON or a body too large.
func refusal(t *testing.T, what string, err error) {
	t.Helper()
	if k := domain.KindOf(err); k != domain.KindInvalid && k != domain.KindTooLarge {
		t.Fatalf("%s: %v is not a 400 or 413 (kind %v)", what, err, k)
	}
	var de *domain.Error
	if errors.As(err, &de) && goWords.MatchString(de.Msg) {
		t.Fatalf("%s: the message quotes Go's internals: %s", what, de.Msg)
	}
}

// goWords are encoding/json's words and Go's type names, which no message to a caller holds.
var goWords = regexp.MustCompile(`Go struct|Go value|json:|cannot unmarshal|invalid character|\[\][a-z*{]|map\[|\bu?int(8|16|32|64)\b|\bfloat(32|64)\b|struct ?\{|not (bool|number)\b`)

// FuzzBodies feeds arbitrary bytes to every request body decoder, and what a decoder accepts to what the handler
// does next (a guardrail's patch and validation, a key's or preset's change, a speech or chat request's checks):
// no panic, and every refusal a 400 or 413.
func FuzzBodies(f *testing.F) {
	for _, s := range []string{``, `{}`, `null`, `[]`, `{"name":null}`, `{"name":"\u0000"}`, `{"name":"a","allowed_models":["a","a"]}`,
		`{"content_filters":[{"pattern":"(","action":"block"}]}`, `{"limit":-1,"limit_reset":"daily"}`, `{"requests_per_minute":null}`,
		`{"designated_version":1e400}`, `{"member_user_ids":["a",null]}`, `{"model":"m","input":"hi","voice":{"id":"v"}}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"\u0000"}]}]}`, `{"a":{"b":[1,{"c":"\ud800"}]}}`, `{"x":-1e-999999}`,
		"{\"name\":\"\xff\"}", `{"config":{"x":[` + string(bytes.Repeat([]byte(`"a",`), 1001)) + `"a"]}}`} {
		f.Add([]byte(s))
	}
	now := time.Unix(0, 0)
	f.Fuzz(func(t *testing.T, body []byte) {
		var g guardrailReq
		if err := bindFields(requestContext("", body), &g); err != nil {
			refusal(t, "guardrail", err)
		} else if patch, err := g.patch(); err != nil {
			refusal(t, "guardrail patch", err)
		} else {
			var spec guardrail.Spec
			patch(&spec)
			if _, err := guardrail.New("g", "w", spec, now); err != nil {
				refusal(t, "guardrail spec", err)
			}
		}
		var k updateKeyReq
		if err := bindFields(requestContext("", body), &k); err != nil {
			refusal(t, "key update", err)
		} else if _, err := k.change(); err != nil {
			refusal(t, "key change", err)
		}
		var p updatePresetReq
		if err := bindFields(requestContext("", body), &p); err != nil {
			refusal(t, "preset update", err)
		} else if ch, err := p.change(); err != nil {
			refusal(t, "preset change", err)
		} else if err := ch.Apply(&preset.Preset{}, now); err != nil {
			refusal(t, "preset apply", err)
		}
		for _, dst := range []any{new(createKeyReq), new(bulkReq), new(map[string]any)} {
			if err := bindFields(requestContext("", body), dst); err != nil {
				refusal(t, "management body", err)
			}
		}
		var s speechReq
		if err := bindJSON(requestContext("", body), &s); err != nil {
			refusal(t, "speech", err)
		} else {
			r := speech.Request{Model: deref(s.Model), Input: deref(s.Input), Voice: deref((*string)(s.Voice))}
			if err := r.Validate(); err != nil {
				refusal(t, "speech request", err)
			}
		}
		var v videoReq
		if err := bindJSON(requestContext("", body), &v); err != nil {
			refusal(t, "video", err)
		} else if r := v.request(); r.Validate() != nil {
			refusal(t, "video request", r.Validate())
		}
		if b, err := readInferenceBody(bytes.NewReader(body), int64(len(body)), chatcompletions.Decode); err != nil {
			refusal(t, "chat", err)
		} else if _, err := b.Request(); err != nil {
			refusal(t, "chat request", err)
		}
	})
}

// FuzzIDsAndQueries: whatever a path id or query holds, checkRequest admits only what a database can store,
// answers the rest as missing (404) or a 400, and never panics.
func FuzzIDsAndQueries(f *testing.F) {
	for _, s := range []string{"", "gen-1-a", "gen-vid-1-x", "00000000-0000-0000-0000-000000000000", "%00", "%FF", "..%2F",
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "workspace_id=%00&id=gen-%FF", "a=1&a=%C3%28"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, id, query string) {
		for _, key := range []string{"hash", "id", "jobId", "slug"} {
			c := requestContext(query, nil)
			c.Params = gin.Params{{Key: key, Value: id}}
			err := checkRequest(c)
			if err != nil {
				if k := domain.KindOf(err); k != domain.KindInvalid && k != domain.KindNotFound {
					t.Fatalf("%s=%q ?%s: %v", key, id, query, err)
				}
				continue
			}
			if _, checked := pathIDs[key]; checked && !domain.Storable(id) {
				t.Fatalf("%s=%q admitted", key, id)
			}
			for name, values := range c.Request.URL.Query() {
				for _, v := range append(values, name) {
					if !domain.Storable(v) {
						t.Fatalf("query %q admitted", query)
					}
				}
			}
		}
	})
}
