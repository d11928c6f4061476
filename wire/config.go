// Package wire is the composition root: it loads the configuration and assembles the object graph with
// google/wire (wire.go, generated into wire_gen.go).
package wire

import (
	"bytes"
	"cmp"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/switchboard-ai/switchboard/adapters/gormstore"
	"github.com/switchboard-ai/switchboard/adapters/httpapi"
	"github.com/switchboard-ai/switchboard/adapters/redisrate"
	"github.com/switchboard-ai/switchboard/adapters/upstream/espeak"
	"github.com/switchboard-ai/switchboard/app"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/domain/video"
)

// Config is the whole configuration, after defaults, the file and the environment.
type Config struct {
	Log         LogConfig
	Server      httpapi.Config
	Database    gormstore.Config
	Providers   []ProviderConfig
	Catalog     *catalog.Catalog
	Limits      LimitsConfig
	Credits     CreditsConfig
	Generations GenerationsConfig
	Video       app.VideoConfig
	Routing     app.HealthConfig
	Redis       RedisConfig
	Metrics     MetricsConfig
	Tracing     TracingConfig
	// Bootstrap is SWITCHBOARD_BOOTSTRAP_MANAGEMENT_KEY: a management key serve creates when none exists.
	Bootstrap string
	// File is the configuration file read, "" for none.
	File string
}

type LogConfig struct {
	Level  slog.Level
	Format string
}

// ProviderConfig is one configured provider: its upstream accounts (API keys, at least one for a remote kind), which
// its calls share by weight.
type ProviderConfig struct {
	Slug        string
	Kind        string
	BaseURL     string
	Keys        []ProviderKey
	Timeout     time.Duration
	IdleTimeout time.Duration
	// ResponsesAPI says the provider serves OpenAI's Responses API (upstream.Config.Responses).
	ResponsesAPI bool
}

// responsesAPI is whether a provider serves the Responses API: as configured, else only OpenAI's own API.
func responsesAPI(kind, baseURL string, set *bool) bool {
	if set != nil {
		return *set
	}
	u, err := url.Parse(baseURL)
	return kind == "openai" && err == nil && u.Hostname() == "api.openai.com"
}

// ProviderKey is one of a provider's accounts.
type ProviderKey struct {
	Key    string
	Weight int
}

// LimitsConfig are the default limits of keys without their own (requests a minute, and tokens a minute and a
// day), and the bounds on what an upstream's chat answer may make the gateway hold (app.ChatLimits).
type LimitsConfig struct {
	RequestsPerMinute int
	Tokens            app.DefaultTokenLimits
	MaxAnswerBytes    int64
	AnswerTimeout     time.Duration
}

type CreditsConfig struct{ Enabled bool }

// RedisConfig is where replicas share their rate limits; without a URL each replica limits on its own.
type RedisConfig struct{ URL string }

// MetricsConfig is where Prometheus metrics are served: GET /metrics on the main listener, or on Addr alone.
type MetricsConfig struct {
	Enabled bool
	Addr    string
}

type GenerationsConfig struct {
	StoreContent bool
	// RetentionDays keeps records (0: forever); ContentRetentionDays their contents (0: as long as the records).
	RetentionDays, ContentRetentionDays int
	// SpoolDir is the write-ahead log of entries not yet in the database (adapters/spool), bounded by
	// SpoolMaxBytes; SpoolFsync waits for the disk (group commit) before a call's answer ends.
	SpoolDir      string
	SpoolMaxBytes int64
	SpoolFsync    bool
}

// The file's shape. Every field has a default, so no file is needed.
type fileConfig struct {
	Log struct {
		Level  string `yaml:"level"`
		Format string `yaml:"format"`
	} `yaml:"log"`
	Server struct {
		Addr              string        `yaml:"addr"`
		BasePath          string        `yaml:"base_path"`
		MaxBodyBytes      int64         `yaml:"max_body_bytes"`
		ReadTimeout       time.Duration `yaml:"read_timeout"`
		ReadHeaderTimeout time.Duration `yaml:"read_header_timeout"`
		WriteTimeout      time.Duration `yaml:"write_timeout"`
		IdleTimeout       time.Duration `yaml:"idle_timeout"`
		ShutdownTimeout   time.Duration `yaml:"shutdown_timeout"`
		PprofAddr         string        `yaml:"pprof_addr"`
		TLSCertFile       string        `yaml:"tls_cert_file"`
		TLSKeyFile        string        `yaml:"tls_key_file"`
		H2C               bool          `yaml:"h2c"`
	} `yaml:"server"`
	// WebSocket bounds the connections of the Responses API's WebSocket mode.
	WebSocket struct {
		MaxMessageBytes int64         `yaml:"max_message_bytes"`
		IdleTimeout     time.Duration `yaml:"idle_timeout"`
		MaxLifetime     time.Duration `yaml:"max_lifetime"`
	} `yaml:"websocket"`
	Database struct {
		URL          string `yaml:"url"`
		MaxOpenConns int    `yaml:"max_open_conns"`
	} `yaml:"database"`
	Providers []struct {
		Slug    string `yaml:"slug"`
		Kind    string `yaml:"kind"`
		BaseURL string `yaml:"base_url"`
		APIKey  string `yaml:"api_key"`
		// APIKeys are several accounts of one provider, instead of api_key: the calls to its endpoints share them
		// by weight.
		APIKeys []struct {
			Key    string `yaml:"key"`
			Weight *int   `yaml:"weight"`
		} `yaml:"api_keys"`
		Timeout     time.Duration `yaml:"timeout"`
		IdleTimeout time.Duration `yaml:"idle_timeout"`
		// ResponsesAPI says the provider serves OpenAI's Responses API (kind openai): Responses requests go to it
		// as they came. By default, only api.openai.com does.
		ResponsesAPI *bool `yaml:"responses_api"`
	} `yaml:"providers"`
	Models []struct {
		ID string `yaml:"id"`
		// Aliases are other names requests may call the model by (claude-sonnet-4-5-20250929).
		Aliases   []string   `yaml:"aliases"`
		Modality  string     `yaml:"modality"`
		Video     *videoCaps `yaml:"video"`
		Endpoints []struct {
			Provider      string `yaml:"provider"`
			UpstreamModel string `yaml:"upstream_model"`
			// Rank orders the endpoints (by default, one after the endpoint before it); Weight shares the calls
			// among the endpoints of one rank.
			Rank   *int `yaml:"rank"`
			Weight *int `yaml:"weight"`
			// SupportedParameters are the request parameters the endpoint supports, for provider.require_parameters.
			SupportedParameters *[]string `yaml:"supported_parameters"`
			Pricing             struct {
				PerMillionCharacters *price `yaml:"per_million_characters"`
				PerSecond            *price `yaml:"per_second"`
				PerSecondWithAudio   *price `yaml:"per_second_with_audio"`
				// Resolutions price a second of video by resolution: {720p: {per_second, per_second_with_audio}}.
				Resolutions                map[string]secondRates `yaml:"resolutions"`
				PerMillionPromptTokens     *price                 `yaml:"per_million_prompt_tokens"`
				PerMillionCompletionTokens *price                 `yaml:"per_million_completion_tokens"`
				// Prompt caching: tokens read from the cache, written to it for 5 minutes, and for an hour.
				PerMillionCacheReadTokens    *price `yaml:"per_million_cache_read_tokens"`
				PerMillionCacheWriteTokens   *price `yaml:"per_million_cache_write_tokens"`
				PerMillionCacheWrite1hTokens *price `yaml:"per_million_cache_write_1h_tokens"`
			} `yaml:"pricing"`
		} `yaml:"endpoints"`
	} `yaml:"models"`
	Generations struct {
		StoreContent         *bool  `yaml:"store_content"`
		RetentionDays        int    `yaml:"retention_days"`
		ContentRetentionDays int    `yaml:"content_retention_days"`
		SpoolDir             string `yaml:"spool_dir"`
		SpoolMaxBytes        int64  `yaml:"spool_max_bytes"`
		SpoolFsync           bool   `yaml:"spool_fsync"`
	} `yaml:"generations"`
	Limits struct {
		RequestsPerMinute int           `yaml:"requests_per_minute"`
		TokensPerMinute   int64         `yaml:"tokens_per_minute"`
		TokensPerDay      int64         `yaml:"tokens_per_day"`
		MaxAnswerBytes    int64         `yaml:"max_answer_bytes"`
		AnswerTimeout     time.Duration `yaml:"answer_timeout"`
	} `yaml:"limits"`
	Credits struct {
		Enabled bool `yaml:"enabled"`
	} `yaml:"credits"`
	Video struct {
		PollInterval   time.Duration `yaml:"poll_interval"`
		WorkerInterval time.Duration `yaml:"worker_interval"`
		JobTimeout     time.Duration `yaml:"job_timeout"`
	} `yaml:"video"`
	Routing struct {
		BreakerFailures int           `yaml:"breaker_failures"`
		BreakerCooldown time.Duration `yaml:"breaker_cooldown"`
	} `yaml:"routing"`
	Redis struct {
		URL string `yaml:"url"`
	} `yaml:"redis"`
	Metrics struct {
		Enabled bool   `yaml:"enabled"`
		Addr    string `yaml:"addr"`
	} `yaml:"metrics"`
	Tracing struct {
		Enabled             bool `yaml:"enabled"`
		TrustCallerSampling bool `yaml:"trust_caller_sampling"`
		TrustCallerState    bool `yaml:"trust_caller_state"`
	} `yaml:"tracing"`
}

// videoCaps is what a video model takes (models[].video), listed by GET /videos/models and checked before any
// upstream call; what it leaves out is left to the provider.
type videoCaps struct {
	Durations     []int    `yaml:"durations"`
	Resolutions   []string `yaml:"resolutions"`
	AspectRatios  []string `yaml:"aspect_ratios"`
	Sizes         []string `yaml:"sizes"`
	FrameImages   []string `yaml:"frame_images"`
	GenerateAudio *bool    `yaml:"generate_audio"`
	Seed          *bool    `yaml:"seed"`
	Default       struct {
		Duration      int    `yaml:"duration"`
		Resolution    string `yaml:"resolution"`
		GenerateAudio bool   `yaml:"generate_audio"`
	} `yaml:"default"`
}

// secondRates price a second of video at one resolution.
type secondRates struct {
	PerSecond          *price `yaml:"per_second"`
	PerSecondWithAudio *price `yaml:"per_second_with_audio"`
}

// price is a dollar amount in the file, read exactly.
type price domain.Micros

func (p *price) UnmarshalYAML(n *yaml.Node) error {
	m, err := domain.ParseUSD(n.Value)
	if err != nil {
		return fmt.Errorf("price %w", err)
	}
	*p = price(m)
	return nil
}

func defaults() fileConfig {
	var f fileConfig
	f.Log.Level, f.Log.Format = "info", "text"
	f.Server.Addr, f.Server.BasePath = ":8080", "/api/v1"
	f.Server.MaxBodyBytes = 10 << 20
	f.Server.ReadTimeout = 60 * time.Second
	f.Server.ReadHeaderTimeout = 10 * time.Second
	f.Server.IdleTimeout = 120 * time.Second
	f.Server.ShutdownTimeout = 30 * time.Second
	f.Server.H2C = true
	f.Database.URL = "sqlite:./data/switchboard.db"
	f.Database.MaxOpenConns = 20
	f.Generations.SpoolDir = "./data/spool"
	f.Generations.SpoolMaxBytes = 1 << 30
	f.Limits.MaxAnswerBytes = app.DefaultMaxAnswerBytes
	f.Limits.AnswerTimeout = app.DefaultAnswerTimeout
	f.Video.PollInterval = 5 * time.Second
	f.Video.WorkerInterval = 2 * time.Second
	f.Video.JobTimeout = app.DefaultJobTimeout
	breaker := app.DefaultHealthConfig()
	f.Routing.BreakerFailures, f.Routing.BreakerCooldown = breaker.Failures, breaker.Cooldown
	f.Metrics.Enabled = true
	return f
}

// ConfigError names the file, line and field of a bad setting.
type ConfigError struct {
	File  string
	Line  int
	Field string
	Msg   string
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString("config")
	if e.File != "" {
		b.WriteString(" " + e.File)
	}
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
	}
	if e.Field != "" {
		b.WriteString(": " + e.Field)
	}
	return b.String() + ": " + e.Msg
}

// offlineYAML is what a gateway started without a configuration file serves on a host with espeak-ng: its local
// voices as the free model local/espeak, so that a first run has a model that answers with no account anywhere.
const offlineYAML = `providers:
  - {slug: local, kind: espeak}
models:
  - {id: local/espeak, modality: tts, endpoints: [{provider: local}]}
`

// LoadStartConfig is LoadConfig for the binary's commands: without a file, on a host where espeak-ng is
// installed, the gateway serves the local speech engine (offlineYAML) rather than no model at all.
func LoadStartConfig(path string, getenv func(string) string) (Config, error) {
	return loadStartConfig(path, getenv, espeak.Installed)
}

func loadStartConfig(path string, getenv func(string) string, engineInstalled func() bool) (Config, error) {
	if path != "" || !engineInstalled() {
		return LoadConfig(path, getenv)
	}
	return load("", []byte(offlineYAML), getenv)
}

// LoadConfig reads the YAML file at path (none when path is empty), expands ${VAR} from getenv inside values,
// applies the environment overrides and validates everything, naming the field and line of the first problem.
func LoadConfig(path string, getenv func(string) string) (Config, error) {
	var raw []byte
	if path != "" {
		var err error
		if raw, err = os.ReadFile(path); err != nil {
			return Config{}, &ConfigError{File: path, Msg: err.Error()}
		}
	}
	return load(path, raw, getenv)
}

// load is LoadConfig on the YAML raw (none when nil) of the file path ("" for the built-in settings).
func load(path string, raw []byte, getenv func(string) string) (Config, error) {
	f := defaults()
	root := &yaml.Node{}
	if raw != nil {
		if err := decodeOne(raw, root); err != nil {
			err.File = path
			return Config{}, err
		}
		if len(root.Content) > 0 {
			expandEnv(root, getenv)
			if err := checkKeys(root.Content[0], reflect.TypeOf(f), ""); err != nil {
				err.File = path
				return Config{}, err
			}
			if err := root.Content[0].Decode(&f); err != nil {
				return Config{}, &ConfigError{File: path, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
			}
		}
	}
	if err := applyEnv(&f, getenv); err != nil {
		return Config{}, err
	}
	cfg, err := f.build(locator{root: root})
	if err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) {
			ce.File = path
		}
		return Config{}, err
	}
	// The sampler is the SDK's variable, read here so that a bad one fails at load (and config check) as a setting
	// does, where the SDK warned and sampled every trace.
	cfg.Tracing.Sampler, cfg.Tracing.SamplerArg = getenv("OTEL_TRACES_SAMPLER"), getenv("OTEL_TRACES_SAMPLER_ARG")
	if cfg.Tracing.Enabled {
		if _, err := cfg.Tracing.sampler(); err != nil {
			return Config{}, err
		}
	}
	cfg.Bootstrap = getenv("SWITCHBOARD_BOOTSTRAP_MANAGEMENT_KEY")
	if cfg.Bootstrap != "" && len(cfg.Bootstrap) < 32 {
		return Config{}, &ConfigError{Field: "SWITCHBOARD_BOOTSTRAP_MANAGEMENT_KEY", Msg: "must be at least 32 characters"}
	}
	cfg.File = path
	return cfg, nil
}

// decodeOne reads the file's YAML document into root. A second document with settings is refused rather than
// ignored: what it sets (after a stray "---", two files concatenated) would otherwise be silently left out.
// Empty documents (a trailing "---") set nothing and are passed over.
func decodeOne(raw []byte, root *yaml.Node) *ConfigError {
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	for {
		var doc yaml.Node
		switch err := dec.Decode(&doc); {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return &ConfigError{Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
		}
		if len(doc.Content) == 0 || doc.Content[0].Tag == "!!null" {
			continue
		}
		if len(root.Content) > 0 {
			return &ConfigError{Line: doc.Content[0].Line, Msg: "a second YAML document: the configuration is one document"}
		}
		*root = doc
	}
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// expandEnv replaces ${VAR} in every scalar value (not in keys), keeping line numbers intact.
func expandEnv(n *yaml.Node, getenv func(string) string) {
	switch n.Kind {
	case yaml.ScalarNode:
		if strings.Contains(n.Value, "${") {
			n.Value = envRef.ReplaceAllStringFunc(n.Value, func(ref string) string { return getenv(ref[2 : len(ref)-1]) })
			if n.Tag != "!!str" { // let the expanded text be typed again (a number, a bool)
				n.Tag = ""
			}
		}
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			expandEnv(n.Content[i], getenv)
		}
	default:
		for _, c := range n.Content {
			expandEnv(c, getenv)
		}
	}
}

// checkKeys rejects keys the configuration does not know, so a typo is an error and not a silent default, and a
// value of the wrong type, naming its setting (yaml's own error names a Go type, and no setting).
func checkKeys(n *yaml.Node, t reflect.Type, path string) *ConfigError {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case n.Kind == yaml.MappingNode && t.Kind() == reflect.Struct && t != reflect.TypeFor[price]():
		fields := map[string]reflect.Type{}
		for i := range t.NumField() {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
			fields[name] = t.Field(i).Type
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			ft, ok := fields[k.Value]
			if !ok {
				return &ConfigError{Line: k.Line, Field: join(path, k.Value), Msg: "unknown setting"}
			}
			if err := checkKeys(n.Content[i+1], ft, join(path, k.Value)); err != nil {
				return err
			}
		}
	case n.Kind == yaml.MappingNode && t.Kind() == reflect.Map:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := checkKeys(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value)); err != nil {
				return err
			}
		}
	case n.Kind == yaml.SequenceNode && t.Kind() == reflect.Slice:
		for i, c := range n.Content {
			if err := checkKeys(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	default:
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			return &ConfigError{Line: n.Line, Field: path, Msg: wants(t, err)}
		}
	}
	return nil
}

// wants says what a setting of type t takes, without the value given (it may be a secret expanded from ${VAR}).
func wants(t reflect.Type, err error) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == reflect.TypeFor[price]():
		return err.Error()
	case t == reflect.TypeFor[time.Duration]():
		return "must be a duration such as 30s"
	case t.Kind() == reflect.Struct:
		return "must be a mapping"
	case t.Kind() == reflect.Slice:
		return "must be a list"
	case t.Kind() == reflect.Bool:
		return "must be true or false"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return "must be a whole number"
	case t.Kind() == reflect.String:
		return "must be a string"
	}
	return "has the wrong type"
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// locator finds the line of a setting by its path, for errors found after decoding.
type locator struct{ root *yaml.Node }

func (l locator) line(path ...any) int {
	if len(l.root.Content) == 0 {
		return 0
	}
	n, line := l.root.Content[0], 0
	for _, p := range path {
		switch p := p.(type) {
		case string:
			if n.Kind != yaml.MappingNode {
				return line
			}
			var next *yaml.Node
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == p {
					line, next = n.Content[i].Line, n.Content[i+1]
				}
			}
			if next == nil {
				return line
			}
			n = next
		case int:
			if n.Kind != yaml.SequenceNode || p >= len(n.Content) {
				return line
			}
			n = n.Content[p]
			line = n.Line
		}
	}
	return line
}

func (l locator) err(msg string, path ...any) *ConfigError {
	var field strings.Builder
	for _, p := range path {
		switch p := p.(type) {
		case string:
			if field.Len() > 0 {
				field.WriteByte('.')
			}
			field.WriteString(p)
		case int:
			fmt.Fprintf(&field, "[%d]", p)
		}
	}
	return &ConfigError{Line: l.line(path...), Field: field.String(), Msg: msg}
}

var slugPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*(/[a-z0-9-]+)?$`)

func (f fileConfig) build(loc locator) (Config, error) {
	var cfg Config
	switch strings.ToLower(f.Log.Level) {
	case "debug":
		cfg.Log.Level = slog.LevelDebug
	case "info":
		cfg.Log.Level = slog.LevelInfo
	case "warn":
		cfg.Log.Level = slog.LevelWarn
	case "error":
		cfg.Log.Level = slog.LevelError
	default:
		return Config{}, loc.err(fmt.Sprintf("%q: must be debug, info, warn or error", f.Log.Level), "log", "level")
	}
	if f.Log.Format != "text" && f.Log.Format != "json" {
		return Config{}, loc.err(fmt.Sprintf("%q: must be text or json", f.Log.Format), "log", "format")
	}
	cfg.Log.Format = f.Log.Format

	s := f.Server
	if err := checkAddr(s.Addr); err != nil {
		return Config{}, loc.err(fmt.Sprintf("%q: %v", s.Addr, err), "server", "addr")
	}
	if !strings.HasPrefix(s.BasePath, "/") || strings.HasSuffix(s.BasePath, "/") && s.BasePath != "/" {
		return Config{}, loc.err("must start with / and not end with /", "server", "base_path")
	}
	if s.MaxBodyBytes <= 0 {
		return Config{}, loc.err("must be positive", "server", "max_body_bytes")
	}
	for name, d := range map[string]time.Duration{"read_timeout": s.ReadTimeout, "read_header_timeout": s.ReadHeaderTimeout,
		"write_timeout": s.WriteTimeout, "idle_timeout": s.IdleTimeout, "shutdown_timeout": s.ShutdownTimeout} {
		if d < 0 {
			return Config{}, loc.err("must not be negative", "server", name)
		}
	}
	if s.PprofAddr != "" {
		if err := checkAddr(s.PprofAddr); err != nil {
			return Config{}, loc.err(fmt.Sprintf("%q: %v", s.PprofAddr, err), "server", "pprof_addr")
		}
		if samePort(s.PprofAddr, s.Addr) {
			return Config{}, loc.err(fmt.Sprintf("%q: must not be the API's port (server.addr %q)", s.PprofAddr, s.Addr), "server", "pprof_addr")
		}
	}
	if field, err := checkTLS(s.TLSCertFile, s.TLSKeyFile); err != nil {
		return Config{}, loc.err(err.Error(), "server", field)
	}
	ws := f.WebSocket
	if ws.MaxMessageBytes < 0 {
		return Config{}, loc.err("must not be negative", "websocket", "max_message_bytes")
	}
	for name, d := range map[string]time.Duration{"idle_timeout": ws.IdleTimeout, "max_lifetime": ws.MaxLifetime} {
		if d < 0 {
			return Config{}, loc.err("must not be negative", "websocket", name)
		}
	}
	cfg.Server = httpapi.Config{Addr: s.Addr, BasePath: strings.TrimSuffix(s.BasePath, "/"), MaxBodyBytes: s.MaxBodyBytes,
		ReadTimeout: s.ReadTimeout, ReadHeaderTimeout: s.ReadHeaderTimeout, WriteTimeout: s.WriteTimeout,
		IdleTimeout: s.IdleTimeout, ShutdownTimeout: s.ShutdownTimeout, PprofAddr: s.PprofAddr,
		TLSCertFile: s.TLSCertFile, TLSKeyFile: s.TLSKeyFile, H2C: s.H2C,
		WebSocket: httpapi.WebSocketConfig{MaxMessageBytes: cmp.Or(ws.MaxMessageBytes, s.MaxBodyBytes),
			IdleTimeout: cmp.Or(ws.IdleTimeout, httpapi.DefaultWebSocketIdle), MaxLifetime: cmp.Or(ws.MaxLifetime, httpapi.DefaultWebSocketLifetime)}}

	if !strings.HasPrefix(f.Database.URL, "postgres://") && !strings.HasPrefix(f.Database.URL, "postgresql://") &&
		!strings.HasPrefix(f.Database.URL, "sqlite:") {
		return Config{}, loc.err("must start with postgres:// or sqlite:", "database", "url")
	}
	if err := gormstore.CheckURL(f.Database.URL); err != nil {
		return Config{}, loc.err(err.Error(), "database", "url")
	}
	cfg.Database = gormstore.Config{URL: f.Database.URL, MaxOpenConns: f.Database.MaxOpenConns}

	kinds := map[string]string{}
	keys := map[string]int{} // how many accounts each provider has
	for i, p := range f.Providers {
		switch {
		case !slugPattern.MatchString(p.Slug):
			return Config{}, loc.err("must be a lowercase slug (letters, digits, hyphens)", "providers", i, "slug")
		case kinds[p.Slug] != "":
			return Config{}, loc.err(fmt.Sprintf("duplicate provider slug %q", p.Slug), "providers", i, "slug")
		case providerKinds[p.Kind].build == nil:
			return Config{}, loc.err(fmt.Sprintf("unknown kind %q; known: %s", p.Kind, knownKinds()), "providers", i, "kind")
		case !providerKinds[p.Kind].local && !isHTTPURL(p.BaseURL):
			return Config{}, loc.err("must be an http:// or https:// URL with a host (the provider's API root)", "providers", i, "base_url")
		case providerKinds[p.Kind].local && len(p.APIKeys) > 0:
			return Config{}, loc.err(fmt.Sprintf("kind %s runs on the gateway's host and takes no key", p.Kind), "providers", i, "api_keys")
		case len(p.APIKeys) > app.MaxAccounts:
			return Config{}, loc.err(fmt.Sprintf("must list at most %d keys", app.MaxAccounts), "providers", i, "api_keys")
		case !providerKinds[p.Kind].local && p.APIKey != "" && len(p.APIKeys) > 0:
			return Config{}, loc.err("set api_key or api_keys, not both", "providers", i, "api_keys")
		case !providerKinds[p.Kind].local && p.APIKey == "" && len(p.APIKeys) == 0:
			return Config{}, loc.err("is empty (after ${VAR} expansion): every call would be refused upstream; "+
				"set it (any placeholder for a host that takes no key)", "providers", i, "api_key")
		case p.Timeout < 0:
			return Config{}, loc.err("must not be negative", "providers", i, "timeout")
		case p.IdleTimeout < 0:
			return Config{}, loc.err("must not be negative", "providers", i, "idle_timeout")
		}
		kinds[p.Slug] = p.Kind
		pc := ProviderConfig{Slug: p.Slug, Kind: p.Kind, BaseURL: strings.TrimSuffix(p.BaseURL, "/"),
			Timeout: p.Timeout, IdleTimeout: p.IdleTimeout, ResponsesAPI: responsesAPI(p.Kind, p.BaseURL, p.ResponsesAPI)}
		if p.ResponsesAPI != nil && *p.ResponsesAPI && p.Kind != "openai" {
			return Config{}, loc.err(fmt.Sprintf("kind %s does not speak the Responses API: only kind openai does", p.Kind), "providers", i, "responses_api")
		}
		if len(p.APIKeys) == 0 {
			pc.Keys = []ProviderKey{{Key: p.APIKey, Weight: 1}}
		}
		for j, k := range p.APIKeys {
			switch {
			case k.Key == "":
				return Config{}, loc.err("is empty (after ${VAR} expansion): every call through it would be refused upstream",
					"providers", i, "api_keys", j, "key")
			case k.Weight != nil && *k.Weight < 1:
				return Config{}, loc.err("must be at least 1", "providers", i, "api_keys", j, "weight")
			}
			pc.Keys = append(pc.Keys, ProviderKey{Key: k.Key, Weight: weightOf(k.Weight)})
		}
		keys[p.Slug] = len(pc.Keys)
		if pc.Timeout == 0 {
			pc.Timeout = 30 * time.Second
		}
		if pc.IdleTimeout == 0 {
			pc.IdleTimeout = 60 * time.Second
		}
		cfg.Providers = append(cfg.Providers, pc)
	}

	seen := map[string]bool{}
	var models []catalog.Model
	for i, m := range f.Models {
		mod := catalog.Modality(m.Modality)
		switch {
		case m.ID == "":
			return Config{}, loc.err("is required", "models", i, "id")
		case seen[m.ID]:
			return Config{}, loc.err(fmt.Sprintf("duplicate model id %q", m.ID), "models", i, "id")
		case !slices.Contains(catalog.Modalities, mod):
			return Config{}, loc.err(fmt.Sprintf("unknown modality %q; must be %s", m.Modality, oneOf(catalog.Modalities)), "models", i, "modality")
		case len(m.Endpoints) == 0:
			return Config{}, loc.err("needs at least one endpoint", "models", i, "endpoints")
		}
		seen[m.ID] = true
		model := catalog.Model{ID: m.ID, Aliases: m.Aliases, Modality: mod}
		if m.Video != nil {
			if mod != catalog.Video {
				return Config{}, loc.err("is for video models only", "models", i, "video")
			}
			caps, err := m.Video.caps(loc, "models", i, "video")
			if err != nil {
				return Config{}, err
			}
			model.Video = &caps
		}
		rank := 0
		for j, e := range m.Endpoints {
			kind, ok := kinds[e.Provider]
			switch {
			case !ok:
				return Config{}, loc.err(fmt.Sprintf("unknown provider %q", e.Provider), "models", i, "endpoints", j, "provider")
			case !providerKinds[kind].serves(mod):
				return Config{}, loc.err(fmt.Sprintf("provider %q (kind %s) cannot serve %s models", e.Provider, kind, mod),
					"models", i, "endpoints", j, "provider")
			case e.UpstreamModel == "" && !providerKinds[kind].local:
				return Config{}, loc.err("is required", "models", i, "endpoints", j, "upstream_model")
			case mod == catalog.Video && keys[e.Provider] > 1:
				// A job is polled and downloaded through the account that started it, which the job does not keep.
				return Config{}, loc.err(fmt.Sprintf("provider %q has several api_keys: a video model's provider takes one", e.Provider),
					"models", i, "endpoints", j, "provider")
			case e.Rank != nil && *e.Rank < rank:
				return Config{}, loc.err(fmt.Sprintf("must be at least %d: endpoints are listed in the order of their ranks", rank),
					"models", i, "endpoints", j, "rank")
			case e.Rank != nil && *e.Rank < 1:
				return Config{}, loc.err("must be at least 1", "models", i, "endpoints", j, "rank")
			case e.Weight != nil && *e.Weight < 1:
				return Config{}, loc.err("must be at least 1", "models", i, "endpoints", j, "weight")
			}
			rank++ // one after the endpoint before it, unless it says
			if e.Rank != nil {
				rank = *e.Rank
			}
			pricing := catalog.Pricing{PerMillionChars: (*domain.Micros)(e.Pricing.PerMillionCharacters),
				PerSecond:                    (*domain.Micros)(e.Pricing.PerSecond),
				PerSecondWithAudio:           (*domain.Micros)(e.Pricing.PerSecondWithAudio),
				PerMillionPromptTokens:       (*domain.Micros)(e.Pricing.PerMillionPromptTokens),
				PerMillionCompletionTokens:   (*domain.Micros)(e.Pricing.PerMillionCompletionTokens),
				PerMillionCacheReadTokens:    (*domain.Micros)(e.Pricing.PerMillionCacheReadTokens),
				PerMillionCacheWriteTokens:   (*domain.Micros)(e.Pricing.PerMillionCacheWriteTokens),
				PerMillionCacheWrite1hTokens: (*domain.Micros)(e.Pricing.PerMillionCacheWrite1hTokens)}
			if mod == catalog.Embeddings && (pricing.PerMillionChars != nil || pricing.PerSecond != nil || pricing.PerSecondWithAudio != nil ||
				pricing.PerMillionCompletionTokens != nil || pricing.PerMillionCacheReadTokens != nil ||
				pricing.PerMillionCacheWriteTokens != nil || pricing.PerMillionCacheWrite1hTokens != nil || len(e.Pricing.Resolutions) > 0) {
				return Config{}, loc.err("an embeddings model is priced per input token: per_million_prompt_tokens, and no other price",
					"models", i, "endpoints", j, "pricing")
			}
			if len(e.Pricing.Resolutions) > 0 {
				rates := catalog.ResolutionRates{}
				for _, res := range slices.Sorted(maps.Keys(e.Pricing.Resolutions)) {
					if err := video.CheckResolution(res); err != nil {
						return Config{}, loc.err(err.Error(), "models", i, "endpoints", j, "pricing", "resolutions", res)
					}
					r := e.Pricing.Resolutions[res]
					rates[res] = catalog.SecondRates{PerSecond: (*domain.Micros)(r.PerSecond), PerSecondWithAudio: (*domain.Micros)(r.PerSecondWithAudio)}
				}
				pricing.Resolutions = &rates
			}
			model.Endpoints = append(model.Endpoints, catalog.Endpoint{Provider: e.Provider, UpstreamModel: e.UpstreamModel, Pricing: pricing,
				Rank: rank, Weight: weightOf(e.Weight), Parameters: e.SupportedParameters})
		}
		models = append(models, model)
	}
	var err error
	if cfg.Catalog, err = catalog.New(models); err != nil {
		return Config{}, err
	}

	if f.Generations.RetentionDays < 0 {
		return Config{}, loc.err("must not be negative", "generations", "retention_days")
	}
	if f.Generations.ContentRetentionDays < 0 {
		return Config{}, loc.err("must not be negative", "generations", "content_retention_days")
	}
	if days := f.Generations.RetentionDays; days > 0 && f.Generations.ContentRetentionDays > days {
		return Config{}, loc.err(fmt.Sprintf("must not exceed retention_days (%d): a content goes with its record", days),
			"generations", "content_retention_days")
	}
	if f.Generations.SpoolDir == "" {
		return Config{}, loc.err("is required", "generations", "spool_dir")
	}
	if f.Generations.SpoolMaxBytes <= 0 {
		return Config{}, loc.err("must be positive", "generations", "spool_max_bytes")
	}
	cfg.Generations = GenerationsConfig{StoreContent: f.Generations.StoreContent == nil || *f.Generations.StoreContent,
		RetentionDays: f.Generations.RetentionDays, ContentRetentionDays: f.Generations.ContentRetentionDays,
		SpoolDir:      f.Generations.SpoolDir,
		SpoolMaxBytes: f.Generations.SpoolMaxBytes, SpoolFsync: f.Generations.SpoolFsync}
	if f.Limits.RequestsPerMinute < 0 {
		return Config{}, loc.err("must not be negative", "limits", "requests_per_minute")
	}
	if f.Limits.MaxAnswerBytes <= 0 {
		return Config{}, loc.err("must be positive", "limits", "max_answer_bytes")
	}
	if f.Limits.AnswerTimeout <= 0 {
		return Config{}, loc.err("must be positive", "limits", "answer_timeout")
	}
	for _, l := range []struct {
		name string
		v    int64
	}{{"tokens_per_minute", f.Limits.TokensPerMinute}, {"tokens_per_day", f.Limits.TokensPerDay}} {
		if l.v < 0 || l.v > account.MaxTokens {
			return Config{}, loc.err(fmt.Sprintf("must be from 0 to %d", int64(account.MaxTokens)), "limits", l.name)
		}
	}
	cfg.Limits = LimitsConfig{RequestsPerMinute: f.Limits.RequestsPerMinute,
		Tokens:         app.DefaultTokenLimits{PerMinute: f.Limits.TokensPerMinute, PerDay: f.Limits.TokensPerDay},
		MaxAnswerBytes: f.Limits.MaxAnswerBytes, AnswerTimeout: f.Limits.AnswerTimeout}
	if f.Routing.BreakerFailures < 1 {
		return Config{}, loc.err("must be at least 1", "routing", "breaker_failures")
	}
	if f.Routing.BreakerCooldown <= 0 {
		return Config{}, loc.err("must be positive", "routing", "breaker_cooldown")
	}
	cfg.Routing = app.HealthConfig{Failures: f.Routing.BreakerFailures, Cooldown: f.Routing.BreakerCooldown}
	cfg.Credits = CreditsConfig{Enabled: f.Credits.Enabled}
	if f.Video.PollInterval <= 0 {
		return Config{}, loc.err("must be positive", "video", "poll_interval")
	}
	if f.Video.WorkerInterval <= 0 {
		return Config{}, loc.err("must be positive", "video", "worker_interval")
	}
	if f.Video.JobTimeout <= 0 {
		return Config{}, loc.err("must be positive", "video", "job_timeout")
	}
	cfg.Video = app.VideoConfig{PollInterval: f.Video.PollInterval, WorkerEvery: f.Video.WorkerInterval, JobTimeout: f.Video.JobTimeout}
	if f.Redis.URL != "" {
		if _, err := redisrate.Options(f.Redis.URL); err != nil { // the parser's message may quote a password
			return Config{}, loc.err("must be a redis:// or rediss:// URL, as in redis://127.0.0.1:6379/0", "redis", "url")
		}
	}
	cfg.Redis = RedisConfig{URL: f.Redis.URL}
	if f.Metrics.Addr != "" {
		if err := checkAddr(f.Metrics.Addr); err != nil {
			return Config{}, loc.err(fmt.Sprintf("%q: %v", f.Metrics.Addr, err), "metrics", "addr")
		}
		// Each listener binds its own port: serve would fail at the second bind, after opening the database.
		if samePort(f.Metrics.Addr, s.Addr) {
			return Config{}, loc.err(fmt.Sprintf("%q: must not be the API's port (server.addr %q)", f.Metrics.Addr, s.Addr), "metrics", "addr")
		}
		if s.PprofAddr != "" && samePort(f.Metrics.Addr, s.PprofAddr) {
			return Config{}, loc.err(fmt.Sprintf("%q: must not be server.pprof_addr's port", f.Metrics.Addr), "metrics", "addr")
		}
	}
	cfg.Metrics = MetricsConfig{Enabled: f.Metrics.Enabled, Addr: f.Metrics.Addr}
	cfg.Tracing = TracingConfig{Enabled: f.Tracing.Enabled, TrustCallerSampling: f.Tracing.TrustCallerSampling,
		TrustCallerState: f.Tracing.TrustCallerState}
	return cfg, nil
}

// caps checks a model's video capabilities against the reference's values, naming the setting of the first bad one.
func (v videoCaps) caps(loc locator, path ...any) (catalog.VideoCaps, error) {
	at := func(key string, i int) []any { return append(append([]any(nil), path...), key, i) }
	for i, d := range v.Durations {
		if d < 1 || d > video.MaxDuration {
			return catalog.VideoCaps{}, loc.err(fmt.Sprintf("must be a number of seconds from 1 to %d", video.MaxDuration), at("durations", i)...)
		}
	}
	for key, values := range map[string][]string{"resolutions": v.Resolutions, "aspect_ratios": v.AspectRatios, "sizes": v.Sizes,
		"frame_images": v.FrameImages} {
		for i, value := range values {
			if err := video.CheckCap(key, value); err != nil {
				return catalog.VideoCaps{}, loc.err(err.Error(), at(key, i)...)
			}
		}
	}
	d := v.Default
	switch {
	case d.Duration < 0 || d.Duration > video.MaxDuration:
		return catalog.VideoCaps{}, loc.err(fmt.Sprintf("must be a number of seconds from 1 to %d", video.MaxDuration), append(path, "default", "duration")...)
	case d.Resolution != "" && video.CheckResolution(d.Resolution) != nil:
		return catalog.VideoCaps{}, loc.err(video.CheckResolution(d.Resolution).Error(), append(path, "default", "resolution")...)
	}
	return catalog.VideoCaps{Durations: v.Durations, Resolutions: v.Resolutions, AspectRatios: v.AspectRatios, Sizes: v.Sizes,
		FrameImages: v.FrameImages, GenerateAudio: v.GenerateAudio, Seed: v.Seed, DefaultDuration: d.Duration,
		DefaultResolution: d.Resolution, DefaultAudio: d.GenerateAudio}, nil
}

// weightOf is a configured weight, 1 when unset.
func weightOf(w *int) int {
	if w == nil {
		return 1
	}
	return *w
}

// checkAddr accepts what net.Listen("tcp", addr) would: host:port with a port number or service name.
func checkAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("must be host:port or :port")
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("port %q: not a port number", port)
	}
	return nil
}

// checkTLS takes a certificate and its key (PEM files), both or neither: the pair must load as the server will
// load it. field names the setting at fault.
func checkTLS(certFile, keyFile string) (field string, err error) {
	switch {
	case certFile == "" && keyFile == "":
		return "", nil
	case certFile == "":
		return "tls_key_file", errors.New("needs server.tls_cert_file beside it (both or neither)")
	case keyFile == "":
		return "tls_cert_file", errors.New("needs server.tls_key_file beside it (both or neither)")
	}
	if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
		return "tls_cert_file", fmt.Errorf("%q with server.tls_key_file %q: %v", certFile, keyFile, err)
	}
	return "", nil
}

// samePort reports whether two checked addresses name one fixed port (port 0 picks a free one each time).
func samePort(a, b string) bool {
	_, pa, _ := net.SplitHostPort(a)
	_, pb, _ := net.SplitHostPort(b)
	na, _ := net.LookupPort("tcp", pa)
	nb, _ := net.LookupPort("tcp", pb)
	return na != 0 && na == nb
}

func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// oneOf lists choices for a message: "a or b", "a, b or c".
func oneOf[T ~string](choices []T) string {
	s := make([]string, len(choices))
	for i, c := range choices {
		s[i] = string(c)
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}
