package wire_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/test/readme"
	"github.com/switchboard-ai/switchboard/test/testcert"
	sbwire "github.com/switchboard-ai/switchboard/wire"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func write(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDefaultsNeedNoFile(t *testing.T) {
	t.Parallel()
	cfg, err := sbwire.LoadConfig("", env())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.Addr != ":8080" || cfg.Server.BasePath != "/api/v1" || cfg.Database.URL != "sqlite:./data/switchboard.db" ||
		cfg.Log.Format != "text" || !cfg.Generations.StoreContent || cfg.Server.ShutdownTimeout != 30*time.Second ||
		!cfg.Server.H2C || cfg.Server.TLSCertFile != "" {
		t.Fatalf("defaults: %+v", cfg)
	}
}

// TestTLSSettings: a certificate and its key that load are taken, from the file or the environment, and h2c
// turns off.
func TestTLSSettings(t *testing.T) {
	t.Parallel()
	pair := testcert.Write(t)
	cfg, err := sbwire.LoadConfig(write(t, "server:\n  tls_cert_file: "+pair.CertFile+"\n  tls_key_file: "+pair.KeyFile+"\n  h2c: false\n"), env())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.TLSCertFile != pair.CertFile || cfg.Server.TLSKeyFile != pair.KeyFile || cfg.Server.H2C {
		t.Fatalf("server: %+v", cfg.Server)
	}
	cfg, err = sbwire.LoadConfig("", env("SWITCHBOARD_SERVER_TLS_CERT_FILE", pair.CertFile, "SWITCHBOARD_SERVER_TLS_KEY_FILE", pair.KeyFile,
		"SWITCHBOARD_SERVER_H2C", "false"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.TLSCertFile != pair.CertFile || cfg.Server.TLSKeyFile != pair.KeyFile || cfg.Server.H2C {
		t.Fatalf("server from the environment: %+v", cfg.Server)
	}
	// A key that is not the certificate's.
	other := testcert.Write(t)
	if _, err := sbwire.LoadConfig("", env("SWITCHBOARD_SERVER_TLS_CERT_FILE", pair.CertFile, "SWITCHBOARD_SERVER_TLS_KEY_FILE", other.KeyFile)); err == nil ||
		!strings.Contains(err.Error(), "server.tls_cert_file") || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("a key of another certificate: %v", err)
	}
}

func TestEnvironment(t *testing.T) {
	t.Parallel()
	path := write(t, `
server:
  addr: ":9000"
providers:
  - slug: openai
    kind: openai
    base_url: https://api.openai.com/v1
    api_key: ${OPENAI_KEY}
    timeout: ${TIMEOUT}
models:
  - id: openai/tts-1
    modality: tts
    endpoints:
      - provider: openai
        upstream_model: tts-1
        pricing: {per_million_characters: 15, per_second: 0.000125}
`)
	const boot = "bootstrap-key-of-at-least-32-characters"
	cfg, err := sbwire.LoadConfig(path, env("OPENAI_KEY", "sk-secret", "TIMEOUT", "7s", "SWITCHBOARD_ADDR", ":7000",
		"DATABASE_URL", "postgres://x@y/z", "SWITCHBOARD_LOG_LEVEL", "debug", "SWITCHBOARD_BOOTSTRAP_MANAGEMENT_KEY", boot,
		"REDIS_URL", "redis://127.0.0.1:6379/2"))
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Providers[0]
	if len(p.Keys) != 1 || p.Keys[0] != (sbwire.ProviderKey{Key: "sk-secret", Weight: 1}) || p.Timeout != 7*time.Second || cfg.Server.Addr != ":7000" ||
		cfg.Database.URL != "postgres://x@y/z" || cfg.Log.Level.String() != "DEBUG" || cfg.Bootstrap != boot ||
		cfg.Redis.URL != "redis://127.0.0.1:6379/2" {
		t.Fatalf("environment not applied: %+v", cfg)
	}
	m, err := cfg.Catalog.Model("openai/tts-1")
	if err != nil || *m.Endpoints[0].Pricing.PerMillionChars != 15_000_000 || *m.Endpoints[0].Pricing.PerSecond != 125 {
		t.Fatalf("model: %+v %v", m, err)
	}
	if got := cfg.Catalog.List(catalog.TTS); len(got) != 1 {
		t.Fatalf("List(tts) = %v", got)
	}
}

func TestConfigErrorsNameFieldAndLine(t *testing.T) {
	t.Parallel()
	const provider = "providers:\n  - slug: openai\n    kind: openai\n    base_url: https://api.openai.com/v1\n    api_key: sk\n"
	tests := []struct {
		name string
		yaml string
		want string
	}{
		{"yaml syntax", "server: [", "line 1"},
		{"unknown setting", "server:\n  adress: x\n", ":2: server.adress: unknown setting"},
		{"unknown nested setting", provider + "    apikey: x\n", ":6: providers[0].apikey: unknown setting"},
		{"wrong type", "server:\n  max_body_bytes: lots\n", ":2: server.max_body_bytes: must be a whole number"},
		{"bad duration", "server:\n  read_timeout: soon\n", ":2: server.read_timeout: must be a duration such as 30s"},
		{"duration without a unit", "server:\n  read_timeout: 5\n", ":2: server.read_timeout: must be a duration such as 30s"},
		{"bad bool", "generations:\n  store_content: maybe\n", ":2: generations.store_content: must be true or false"},
		{"list for a string", "log:\n  level: [debug]\n", ":2: log.level: must be a string"},
		{"list for a section", "log: [1, 2]\n", ":1: log: must be a mapping"},
		{"mapping for a list", "providers: {slug: x}\n", ":1: providers: must be a list"},
		{"mapping for a nested list", provider + "models:\n  - id: m\n    modality: tts\n    endpoints: {provider: openai}\n",
			":9: models[0].endpoints: must be a list"},
		{"not a mapping", "- a\n", ":1: must be a mapping"},
		{"a second document", "log: {level: info}\n---\nbogus: 1\n", ":3: a second YAML document: the configuration is one document"},
		{"a second document after an empty one", "---\n---\nlog: {level: debug}\n---\nbogus: 1\n", ":5: a second YAML document"},
		{"bad log level", "log:\n  level: loud\n", ":2: log.level:"},
		{"bad log format", "log:\n  format: xml\n", ":2: log.format:"},
		{"bad database url", "database:\n  url: mysql://x\n", ":2: database.url:"},
		{"bad base path", "server:\n  base_path: api\n", ":2: server.base_path:"},
		{"duplicate slug", provider + "  - slug: openai\n    kind: openai\n    base_url: https://x\n    api_key: k\n", `:6: providers[1].slug: duplicate provider slug "openai"`},
		{"unknown kind", "providers:\n  - slug: x\n    kind: carrier-pigeon\n    base_url: https://x\n", ":3: providers[0].kind: unknown kind"},
		{"missing base_url", "providers:\n  - slug: x\n    kind: openai\n", "providers[0].base_url"},
		{"unknown provider", provider + "models:\n  - id: m\n    modality: tts\n    endpoints:\n      - provider: nope\n        upstream_model: x\n",
			`:10: models[0].endpoints[0].provider: unknown provider "nope"`},
		{"unknown modality", provider + "models:\n  - id: m\n    modality: image\n    endpoints:\n      - provider: openai\n        upstream_model: x\n",
			`:8: models[0].modality: unknown modality "image"`},
		{"kind cannot serve modality", "providers:\n  - slug: el\n    kind: elevenlabs\n    base_url: https://x\n    api_key: k\nmodels:\n  - id: m\n    modality: video\n    endpoints:\n      - provider: el\n        upstream_model: x\n",
			"models[0].endpoints[0].provider: provider \"el\" (kind elevenlabs) cannot serve video models"},
		{"kind cannot serve embeddings", "providers:\n  - slug: el\n    kind: elevenlabs\n    base_url: https://x\n    api_key: k\nmodels:\n  - id: m\n    modality: embeddings\n    endpoints:\n      - provider: el\n        upstream_model: x\n",
			"models[0].endpoints[0].provider: provider \"el\" (kind elevenlabs) cannot serve embeddings models"},
		{"embeddings priced per completion token", provider + "models:\n  - id: m\n    modality: embeddings\n    endpoints:\n      - provider: openai\n        upstream_model: x\n        pricing: {per_million_prompt_tokens: 0.02, per_million_completion_tokens: 1}\n",
			"models[0].endpoints[0].pricing: an embeddings model is priced per input token: per_million_prompt_tokens, and no other price"},
		{"video capabilities on a tts model", provider + "models:\n  - id: m\n    modality: tts\n    video: {durations: [5]}\n    endpoints: [{provider: openai, upstream_model: x}]\n",
			":9: models[0].video: is for video models only"},
		{"a resolution no request can ask for", provider + "models:\n  - id: m\n    modality: video\n    video:\n      resolutions: [720p, 8K]\n    endpoints: [{provider: openai, upstream_model: x}]\n",
			`:10: models[0].video.resolutions[1]: "8K": must be one of`},
		{"a duration past the bound", provider + "models:\n  - id: m\n    modality: video\n    video: {durations: [5, 600]}\n    endpoints: [{provider: openai, upstream_model: x}]\n",
			":9: models[0].video.durations[1]: must be a number of seconds from 1 to 120"},
		{"a price for an unknown resolution", provider + "models:\n  - id: m\n    modality: video\n    endpoints:\n      - provider: openai\n        upstream_model: x\n        pricing: {resolutions: {720: {per_second: 0.1}}}\n",
			`:12: models[0].endpoints[0].pricing.resolutions.720: "720": must be one of`},
		{"an unknown key in a resolution's price", provider + "models:\n  - id: m\n    modality: video\n    endpoints:\n      - provider: openai\n        upstream_model: x\n        pricing: {resolutions: {720p: {per_minute: 0.1}}}\n",
			":12: models[0].endpoints[0].pricing.resolutions.720p.per_minute: unknown setting"},
		{"no job timeout", "video:\n  job_timeout: 0s\n", ":2: video.job_timeout: must be positive"},
		{"duplicate model", provider + "models:\n  - id: m\n    modality: tts\n    endpoints: [{provider: openai, upstream_model: x}]\n  - id: m\n    modality: tts\n    endpoints: [{provider: openai, upstream_model: x}]\n",
			`:10: models[1].id: duplicate model id "m"`},
		{"negative price", provider + "models:\n  - id: m\n    modality: tts\n    endpoints: [{provider: openai, upstream_model: x, pricing: {per_second: -1}}]\n",
			":9: models[0].endpoints[0].pricing.per_second: price \"-1\" is negative"},
		{"no endpoints", provider + "models:\n  - id: m\n    modality: tts\n", "models[0].endpoints: needs at least one endpoint"},
		{"database url that does not parse", "database:\n  url: postgres://sb:hunter2@db:port/sb\n", `:2: database.url: invalid port ":port" after host`},
		{"database url with a bad setting", "database:\n  url: postgres://db/sb?password=hunter2&sslmode=bogus\n", ":2: database.url: sslmode is invalid"},
		{"bad redis url", "redis:\n  url: http://user:hunter2@x\n", ":2: redis.url: must be a redis:// or rediss:// URL"},
		{"negative retention", "generations:\n  retention_days: -1\n", ":2: generations.retention_days:"},
		{"negative content retention", "generations:\n  content_retention_days: -1\n", ":2: generations.content_retention_days: must not be negative"},
		{"contents kept past their records", "generations:\n  retention_days: 30\n  content_retention_days: 31\n",
			":3: generations.content_retention_days: must not exceed retention_days (30): a content goes with its record"},
		{"base_url without host", "providers:\n  - {slug: x, kind: openai, base_url: 'https:/x', api_key: k}\n", ":2: providers[0].base_url:"},
		{"api_key empty after expansion", "providers:\n  - {slug: x, kind: openai, base_url: https://x, api_key: '${UNSET}'}\n", ":2: providers[0].api_key: is empty"},
		{"bad addr", "server:\n  addr: 8080\n", `:2: server.addr: "8080": must be host:port or :port`},
		{"bad port", "server:\n  addr: ':http-ish'\n", ":2: server.addr:"},
		{"bad metrics addr", "metrics:\n  addr: localhost\n", `:2: metrics.addr: "localhost": must be host:port or :port`},
		{"bad pprof addr", "server:\n  pprof_addr: 6060\n", `:2: server.pprof_addr: "6060": must be host:port or :port`},
		{"metrics on the API port", "server:\n  addr: ':8080'\nmetrics:\n  addr: 127.0.0.1:8080\n", `:4: metrics.addr: "127.0.0.1:8080": must not be the API's port (server.addr ":8080")`},
		{"metrics on the pprof port", "server:\n  pprof_addr: 127.0.0.1:6060\nmetrics:\n  addr: 127.0.0.1:6060\n", `:4: metrics.addr: "127.0.0.1:6060": must not be server.pprof_addr's port`},
		{"pprof on the API port", "server:\n  addr: ':8080'\n  pprof_addr: 127.0.0.1:8080\n", `:3: server.pprof_addr: "127.0.0.1:8080": must not be the API's port`},
		{"certificate without its key", "server:\n  tls_cert_file: /etc/sb/cert.pem\n", ":2: server.tls_cert_file: needs server.tls_key_file beside it"},
		{"key without its certificate", "server:\n  tls_key_file: /etc/sb/key.pem\n", ":2: server.tls_key_file: needs server.tls_cert_file beside it"},
		{"certificate that does not load", "server:\n  tls_cert_file: /nonexistent/cert.pem\n  tls_key_file: /nonexistent/key.pem\n",
			`:2: server.tls_cert_file: "/nonexistent/cert.pem" with server.tls_key_file "/nonexistent/key.pem": open /nonexistent/cert.pem`},
		{"bad h2c", "server:\n  h2c: sometimes\n", ":2: server.h2c: must be true or false"},
		{"api_key and api_keys", "providers:\n  - {slug: x, kind: openai, base_url: https://x, api_key: k, api_keys: [{key: j}]}\n",
			":2: providers[0].api_keys: set api_key or api_keys, not both"},
		{"an api_keys key empty", "providers:\n  - slug: x\n    kind: openai\n    base_url: https://x\n    api_keys: [{key: j}, {key: '${UNSET}'}]\n",
			":5: providers[0].api_keys[1].key: is empty"},
		{"an api_keys weight of 0", "providers:\n  - slug: x\n    kind: openai\n    base_url: https://x\n    api_keys: [{key: j, weight: 0}]\n",
			":5: providers[0].api_keys[0].weight: must be at least 1"},
		{"api_keys on a local kind", "providers:\n  - {slug: x, kind: espeak, api_keys: [{key: j}]}\n", ":2: providers[0].api_keys: kind espeak"},
		{"several keys for a video model", "providers:\n  - {slug: x, kind: openai, base_url: https://x, api_keys: [{key: j}, {key: k}]}\n" +
			"models:\n  - {id: m, modality: video, endpoints: [{provider: x, upstream_model: s}]}\n",
			`:4: models[0].endpoints[0].provider: provider "x" has several api_keys`},
		{"ranks out of order", provider + "models:\n  - id: m\n    modality: tts\n    endpoints: [{provider: openai, upstream_model: a, rank: 2}, {provider: openai, upstream_model: b, rank: 1}]\n",
			"models[0].endpoints[1].rank: must be at least 2: endpoints are listed in the order of their ranks"},
		{"a rank of 0", provider + "models:\n  - id: m\n    modality: tts\n    endpoints: [{provider: openai, upstream_model: a, rank: 0}]\n",
			"models[0].endpoints[0].rank: must be at least 1"},
		{"an endpoint weight of 0", provider + "models:\n  - id: m\n    modality: tts\n    endpoints: [{provider: openai, upstream_model: a, weight: 0}]\n",
			"models[0].endpoints[0].weight: must be at least 1"},
		{"supported_parameters not a list", provider + "models:\n  - id: m\n    modality: chat\n    endpoints: [{provider: openai, upstream_model: a, supported_parameters: tools}]\n",
			"models[0].endpoints[0].supported_parameters: must be a list"},
		{"negative tokens per minute", "limits:\n  tokens_per_minute: -1\n", ":2: limits.tokens_per_minute: must be from 0 to 1000000000"},
		{"no breaker failures", "routing:\n  breaker_failures: 0\n", ":2: routing.breaker_failures: must be at least 1"},
		{"no breaker cool-down", "routing:\n  breaker_cooldown: 0s\n", ":2: routing.breaker_cooldown: must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := write(t, tt.yaml)
			_, err := sbwire.LoadConfig(path, env())
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q does not name %q in %s", err, tt.want, path)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("error %q repeats a password", err)
			}
		})
	}
}

// TestEnvOverrides: every scalar setting has its SWITCHBOARD_SECTION_KEY variable, which wins over the file
// (and over an alias), and a bad value names the variable.
// Empty documents around the configuration's set nothing, and are no error.
func TestEmptyDocuments(t *testing.T) {
	t.Parallel()
	for _, yaml := range []string{"log: {level: debug}\n---\n", "---\n---\nlog: {level: debug}\n", "---\n# nothing\n---\nlog: {level: debug}\n---\n"} {
		cfg, err := sbwire.LoadConfig(write(t, yaml), env())
		if err != nil || cfg.Log.Level.String() != "DEBUG" {
			t.Errorf("%q: level %v, %v", yaml, cfg.Log.Level, err)
		}
	}
}

func TestEnvOverrides(t *testing.T) {
	t.Parallel()
	path := write(t, "server:\n  addr: ':9000'\ngenerations:\n  store_content: true\n")
	cfg, err := sbwire.LoadConfig(path, env("SWITCHBOARD_SERVER_ADDR", ":7001", "SWITCHBOARD_ADDR", ":7000",
		"SWITCHBOARD_SERVER_READ_TIMEOUT", "3s", "SWITCHBOARD_GENERATIONS_STORE_CONTENT", "false",
		"SWITCHBOARD_DATABASE_MAX_OPEN_CONNS", "7", "SWITCHBOARD_CREDITS_ENABLED", "true", "SWITCHBOARD_LOG_FORMAT", "json"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.Addr != ":7001" || cfg.Server.ReadTimeout != 3*time.Second || cfg.Generations.StoreContent ||
		cfg.Database.MaxOpenConns != 7 || !cfg.Credits.Enabled || cfg.Log.Format != "json" {
		t.Fatalf("overrides not applied: %+v", cfg)
	}
	for _, tt := range []struct{ name, value, want string }{
		{"SWITCHBOARD_SERVER_MAX_BODY_BYTES", "lots", "config: SWITCHBOARD_SERVER_MAX_BODY_BYTES: must be a whole number"},
		{"SWITCHBOARD_SERVER_READ_TIMEOUT", "soon", "config: SWITCHBOARD_SERVER_READ_TIMEOUT: must be a duration such as 30s"},
		{"SWITCHBOARD_TRACING_ENABLED", "maybe", "config: SWITCHBOARD_TRACING_ENABLED: must be true or false"},
	} {
		if _, err = sbwire.LoadConfig("", env(tt.name, tt.value)); err == nil || err.Error() != tt.want {
			t.Errorf("%s=%s: %v, want %q", tt.name, tt.value, err, tt.want)
		}
	}
	if _, err = sbwire.LoadConfig("", env("SWITCHBOARD_BOOTSTRAP_MANAGEMENT_KEY", "short")); err == nil ||
		!strings.Contains(err.Error(), "at least 32") {
		t.Fatalf("short bootstrap key: %v", err)
	}
}

func TestUnknownEnv(t *testing.T) {
	t.Parallel()
	got := sbwire.UnknownEnv(slices.Values([]string{"SWITCHBOARD_LOG_LEVL", "SWITCHBOARD_LOG_LEVEL", "SWITCHBOARD_ADDR",
		"SWITCHBOARD_CONFIG", "SWITCHBOARD_BOOTSTRAP_MANAGEMENT_KEY", "DATABASE_URL", "HOME", "SWITCHBOARD_SERVER_ADRR"}))
	if strings.Join(got, " ") != "SWITCHBOARD_LOG_LEVL SWITCHBOARD_SERVER_ADRR" {
		t.Errorf("UnknownEnv: %v, want the two typos", got)
	}
}

// TestDocsListEveryOverride: the configuration table of docs/configuration.md has a row for every scalar setting and none for a
// setting the code does not read, each row with its variable (and older name) and its default: the default the
// row gives, set through the variable, loads the configuration that nothing set loads.
func TestDocsListEveryOverride(t *testing.T) {
	t.Parallel()
	table := readme.Table(t, "docs/configuration.md", "| setting | default | environment | meaning |")
	rows := map[string][]string{} // setting: its cells
	for _, line := range strings.Split(table, "\n") {
		if cells := strings.Split(line, " | "); len(cells) == 4 && strings.HasPrefix(cells[0], "| `") {
			rows[strings.Trim(cells[0], "| `")] = cells
		}
	}
	want, err := sbwire.LoadConfig("", env())
	if err != nil {
		t.Fatal(err)
	}
	backticked := regexp.MustCompile("`([^`]*)`")
	for _, o := range sbwire.EnvOverrides() {
		cells, ok := rows[o.Setting]
		delete(rows, o.Setting)
		switch {
		case !ok:
			t.Errorf("docs/configuration.md's configuration table has no row for %s", o.Setting)
			continue
		case !strings.HasPrefix(cells[2], "`"+o.Env+"`"):
			t.Errorf("docs/configuration.md gives %s the variable %q, want %s", o.Setting, cells[2], o.Env)
		case o.Alias != "" && !strings.Contains(cells[2], "(or `"+o.Alias+"`)"):
			t.Errorf("docs/configuration.md does not give %s's older variable %s", o.Setting, o.Alias)
		}
		def := backticked.FindStringSubmatch(cells[1])
		if def == nil {
			if !strings.HasPrefix(cells[1], "none") {
				t.Errorf("docs/configuration.md's default of %s is %q: a value in backticks, or none", o.Setting, cells[1])
			}
			continue // unset: nothing to set it to
		}
		got, err := sbwire.LoadConfig("", env(o.Env, def[1]))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("docs/configuration.md's default of %s, %s=%s, loads another configuration than the default (err %v)", o.Setting, o.Env, def[1], err)
		}
	}
	for setting := range rows {
		if setting != "providers[]" && setting != "models[]" {
			t.Errorf("docs/configuration.md's configuration table lists %s, which the code does not read", setting)
		}
	}
}

func TestMissingFile(t *testing.T) {
	t.Parallel()
	if _, err := sbwire.LoadConfig("/does/not/exist.yaml", env()); err == nil || !strings.Contains(err.Error(), "/does/not/exist.yaml") {
		t.Fatalf("err = %v", err)
	}
}

// TestRoutingSettings: several keys of one provider, endpoints' ranks (by default one after the endpoint before),
// weights and supported parameters, the breaker and the token limits, as the file sets them.
func TestRoutingSettings(t *testing.T) {
	t.Parallel()
	path := write(t, `providers:
  - {slug: pool, kind: openai, base_url: https://x, api_keys: [{key: "${A}", weight: 3}, {key: b}]}
models:
  - id: m
    modality: chat
    endpoints:
      - {provider: pool, upstream_model: a, rank: 2, weight: 5, supported_parameters: [tools, seed]}
      - {provider: pool, upstream_model: b, rank: 2, supported_parameters: []}
      - {provider: pool, upstream_model: c}
routing: {breaker_failures: 2, breaker_cooldown: 5s}
limits: {tokens_per_minute: 100, tokens_per_day: 1000}
`)
	cfg, err := sbwire.LoadConfig(path, env("A", "sk-a"))
	if err != nil {
		t.Fatal(err)
	}
	if keys := cfg.Providers[0].Keys; !slices.Equal(keys, []sbwire.ProviderKey{{Key: "sk-a", Weight: 3}, {Key: "b", Weight: 1}}) {
		t.Fatalf("keys %+v", keys)
	}
	m, _ := cfg.Catalog.Model("m")
	var got []string
	for _, ep := range m.Endpoints {
		params := "undeclared"
		if ep.Parameters != nil {
			params = strings.Join(*ep.Parameters, ",")
		}
		got = append(got, fmt.Sprintf("%s rank %d weight %d params %s", ep.UpstreamModel, ep.Rank, ep.Weight, params))
	}
	if want := []string{"a rank 2 weight 5 params tools,seed", "b rank 2 weight 1 params ", "c rank 3 weight 1 params undeclared"}; !slices.Equal(got, want) {
		t.Fatalf("endpoints %q, want %q", got, want)
	}
	if cfg.Routing.Failures != 2 || cfg.Routing.Cooldown != 5*time.Second || cfg.Limits.Tokens.PerMinute != 100 || cfg.Limits.Tokens.PerDay != 1000 {
		t.Fatalf("routing %+v, limits %+v", cfg.Routing, cfg.Limits)
	}
}
