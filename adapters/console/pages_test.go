package console

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/domain/generation"
)

// TestListFilter: the generations page's query becomes a list filter, and a bad field is a 400 naming it.
func TestListFilter(t *testing.T) {
	t.Parallel()
	cursor := generation.Cursor{CreatedAt: time.Date(2026, 5, 5, 1, 2, 3, 0, time.UTC), ID: "gen-1"}
	for _, tt := range []struct {
		query, wantErr string
		check          func(t *testing.T, q url.Values)
	}{
		{query: "model=a%2Fb&provider=p&key=h&session=s&user=u&status=429&from=2026-05-01&to=2026-05-03&after=" + cursor.String(),
			check: func(t *testing.T, q url.Values) {
				f, _ := listFilter(q)
				if f.Model != "a/b" || f.ProviderName != "p" || f.KeyHash != "h" || f.SessionID != "s" || f.UserID != "u" ||
					f.Status != 429 || !f.From.Equal(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)) ||
					!f.To.Equal(time.Date(2026, 5, 4, 0, 0, 0, 0, time.UTC)) || f.After == nil || *f.After != cursor ||
					f.Limit != generation.DefaultPage {
					t.Fatalf("%+v", f)
				}
			}},
		{query: "", check: func(t *testing.T, q url.Values) {
			if f, _ := listFilter(q); !f.From.IsZero() || !f.To.IsZero() || f.After != nil || f.Status != 0 {
				t.Fatalf("%+v", f)
			}
		}},
		{query: "status=abc", wantErr: "status"},
		{query: "status=99", wantErr: "status"},
		{query: "from=yesterday", wantErr: "from"},
		{query: "to=2026-13-01", wantErr: "to"},
		{query: "after=not-a-cursor", wantErr: "cursor"},
		{query: "model=" + strings.Repeat("m", 300), wantErr: "model"},
	} {
		t.Run(tt.query, func(t *testing.T) {
			q, err := url.ParseQuery(tt.query)
			if err != nil {
				t.Fatal(err)
			}
			_, err = listFilter(q)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, q)
		})
	}
}
