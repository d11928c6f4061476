package chat_test

import (
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/domain/chat"
)

func TestRoute(t *testing.T) {
	t.Parallel()
	eps := []catalog.Endpoint{{Provider: "a"}, {Provider: "b"}, {Provider: "c"}}
	no := false
	for _, tc := range []struct {
		route chat.Route
		want  string // the providers tried, in order; "404" for none
	}{
		{chat.Route{}, "abc"},
		{chat.Route{Order: []string{"c", "A"}}, "cab"},
		{chat.Route{Order: []string{"c", "x"}, AllowFallbacks: &no}, "c"},
		{chat.Route{AllowFallbacks: &no}, "a"},
		{chat.Route{Only: []string{"b", "c"}, Order: []string{"c"}}, "cb"},
		{chat.Route{Ignore: []string{"a"}}, "bc"},
		{chat.Route{Only: []string{"a"}, Ignore: []string{"a"}}, "404"},
		{chat.Route{Order: []string{"x"}, AllowFallbacks: &no}, "404"},
		{chat.Route{Order: []string{}, Only: []string{}, Ignore: []string{}}, "abc"},
	} {
		got, err := tc.route.Apply("m", eps)
		var names strings.Builder
		for _, ep := range got {
			names.WriteString(ep.Provider)
		}
		if err != nil {
			names.WriteString("404")
			if !strings.Contains(err.Error(), "provider") {
				t.Errorf("%+v: error %v does not name provider", tc.route, err)
			}
		}
		if names.String() != tc.want {
			t.Errorf("%+v: tried %q, want %q", tc.route, names.String(), tc.want)
		}
	}
}
