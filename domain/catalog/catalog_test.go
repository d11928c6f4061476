package catalog_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/catalog"
)

// TestUnknownModelNamed: the 404 for an unknown model names it, cut to its first 256 bytes (at a character's
// start) when it is longer.
func TestUnknownModelNamed(t *testing.T) {
	t.Parallel()
	c, err := catalog.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, id, want string }{
		{"short", "acme/none", "acme/none"},
		{"at the bound", strings.Repeat("a", 256), strings.Repeat("a", 256)},
		{"a megabyte", strings.Repeat("a", 1<<20), strings.Repeat("a", 256) + "…"},
		{"cut before a character it would split", strings.Repeat("a", 255) + "é" + strings.Repeat("b", 10), strings.Repeat("a", 255) + "…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Model(tc.id)
			var de *domain.Error
			if !errors.As(err, &de) || de.Kind != domain.KindNotFound {
				t.Fatalf("err = %v, want a 404", err)
			}
			if de.Meta["model"] != tc.want || !strings.Contains(de.Msg, tc.want) || len(de.Msg) > 300 {
				t.Fatalf("named %q in %d bytes of message, want %q", de.Meta["model"], len(de.Msg), tc.want)
			}
		})
	}
}
