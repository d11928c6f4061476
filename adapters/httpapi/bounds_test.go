package httpapi

import (
	"errors"
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/domain"
)

// TestBodyBounds: a body that bindJSON decodes whole is held to inbound.CheckFree before it is decoded, each list and
// object at the bound passing and one past it refused naming the field (a key given twice counted twice), and the
// whole body past domain.MaxValues refused, in every request type that decodes its body whole.
func TestBodyBounds(t *testing.T) {
	items := func(n int, item string) string { return strings.TrimSuffix(strings.Repeat(item+",", n), ",") }
	ids := func(n int) string { return `[` + items(n, `"u"`) + `]` }
	filters := func(n int) string { return `[` + items(n, `{"pattern":"a","action":"block"}`) + `]` }
	options := func(v string) string { return `"provider":{"options":{"openai":{"a":` + v + `}}}` }
	// nest is n lists of n lists of one value: n*n+n values within the body's list
	nest := func(n int) string { return `[` + items(n, `[`+items(n, `1`)+`]`) + `]` }
	for _, tt := range []struct {
		dst   func() any
		body  string
		field string // "" when the body passes
	}{
		{func() any { return new(bulkReq) }, `{"member_user_ids":` + ids(domain.MaxListEntries) + `}`, ""},
		{func() any { return new(bulkReq) }, `{"member_user_ids":` + ids(domain.MaxListEntries+1) + `}`, "member_user_ids"},
		{func() any { return new(bulkReq) }, `{"key_hashes":[` + items(domain.MaxListEntries+1, `null`) + `]}`, "key_hashes"},
		{func() any { return new(guardrailReq) }, `{"content_filters":` + filters(domain.MaxListEntries) + `}`, ""},
		{func() any { return new(guardrailReq) }, `{"content_filters":` + filters(domain.MaxListEntries+1) + `}`, "content_filters"},
		{func() any { return new(guardrailReq) }, `{"content_filter_builtins":[` + items(domain.MaxListEntries+1, `{}`) + `]}`, "content_filter_builtins"},
		{func() any { return new(guardrailReq) }, `{"content_filters":[{"label":"l",` + items(domain.MaxListEntries, `"label":"l"`) + `}]}`, "content_filters[0]"},
		{func() any { return new(updatePresetReq) }, `{` + items(domain.MaxListEntries+1, `"name":"a"`) + `}`, "body"},
		{func() any { return new(map[string]any) }, `{"a":` + nest(140) + `}`, ""}, // 19,741 values
		{func() any { return new(map[string]any) }, `{"a":` + nest(141) + `}`, "body"},
		{func() any { return new(map[string]any) }, `{"a":{"b\u0000":` + ids(domain.MaxListEntries+1) + `}}`, "a.b\x00"},
		{func() any { return new(speechReq) }, `{` + options(`[`+items(domain.MaxListEntries+1, `[]`)+`]`) + `}`, "provider.options.openai.a"},
		{func() any { return new(videoReq) }, `{"frame_images":[` + items(domain.MaxListEntries+1, `{}`) + `]}`, "frame_images"},
		{func() any { return new(videoReq) }, `{"input_references":[` + items(domain.MaxListEntries, `{}`) + `]}`, ""},
		{func() any { return new(videoReq) }, `{` + options(nest(141)) + `}`, "body"},
	} {
		err := bindJSON(requestContext("", []byte(tt.body)), tt.dst())
		if tt.field == "" {
			if err != nil {
				t.Errorf("%.80s: %v", tt.body, err)
			}
			continue
		}
		var de *domain.Error
		if !errors.As(err, &de) || de.Kind != domain.KindInvalid || !strings.HasPrefix(de.Msg, tt.field+": must have at most ") {
			t.Errorf("%.80s: %v, want a 400 naming %s", tt.body, err, tt.field)
		}
	}
}
