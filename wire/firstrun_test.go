package wire

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFirstRun: without a configuration file the gateway serves the local speech engine when espeak-ng is
// installed (and nothing when it is not); a file decides alone. The log at start names the file (or none), the
// database without its password and the models, and when there are none, what to do.
func TestFirstRun(t *testing.T) {
	t.Parallel()
	empty := filepath.Join(t.TempDir(), "empty.yaml")
	if err := os.WriteFile(empty, []byte("log: {level: info}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pg := func(k string) string {
		return map[string]string{"DATABASE_URL": "postgres://sb:s3cret@db:5432/sb"}[k]
	}
	for _, tt := range []struct {
		name      string
		path      string
		installed bool
		want      []string // in the log, in order
	}{
		{"no file, espeak-ng installed", "", true, []string{
			`level=INFO msg=configuration file="none (the defaults; give one with --config PATH or SWITCHBOARD_CONFIG)"`,
			`database="PostgreSQL postgres://sb:xxxxx@db:5432/sb"`,
			`level=INFO msg="serving models" count=1 models=local/espeak`}},
		{"no file, no espeak-ng", "", false, []string{
			`msg=configuration file="none`,
			`level=WARN msg="serving no models: every inference call is a 404. Give a configuration file`,
			"install espeak-ng"}},
		{"a file without models", empty, true, []string{
			"msg=configuration file=" + empty,
			`level=WARN msg="serving no models: every inference call is a 404. Add providers and models to the configuration file`,
			"file=" + empty}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := loadStartConfig(tt.path, pg, func() bool { return tt.installed })
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			logStart(slog.New(slog.NewTextHandler(&out, nil)), cfg)
			log := out.String()
			if strings.Contains(log, "s3cret") {
				t.Errorf("the log holds the database's password:\n%s", log)
			}
			rest := log
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("the log lacks %q (in order):\n%s", w, log)
				}
				rest = rest[i+len(w):]
			}
		})
	}
}
