package replicas_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	sbwire "github.com/switchboard-ai/switchboard/wire"
)

// compose is the part of docker-compose.yml this test reads.
type compose struct {
	Services map[string]struct {
		Image       string
		Build       string
		Environment map[string]string
		Volumes     []string
		Ports       []string
		Healthcheck *struct{ Test []string }
		DependsOn   map[string]struct{ Condition string } `yaml:"depends_on"`
	}
}

// There is no Docker engine where the tests run, so docker-compose.yml is checked here instead of started: it
// parses (anchors and merge keys included), every service has a health check and waits for the health of what
// it needs, two gateway replicas share one PostgreSQL and one Redis behind the one published port, nginx sends
// to every replica, and the sample configuration passes the gateway's own checks.
func TestComposeFile(t *testing.T) {
	root := filepath.Join("..", "..")
	raw, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var c compose
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	var gateways []string
	for name, s := range c.Services {
		if s.Healthcheck == nil || len(s.Healthcheck.Test) == 0 {
			t.Errorf("service %s has no health check", name)
		}
		for dep, d := range s.DependsOn {
			if _, ok := c.Services[dep]; !ok || d.Condition != "service_healthy" {
				t.Errorf("service %s depends on %s (%q): want an existing service, service_healthy", name, dep, d.Condition)
			}
		}
		if len(s.Ports) > 0 && name != "proxy" {
			t.Errorf("service %s publishes %v: only the proxy should", name, s.Ports)
		}
		if s.Build == "." {
			gateways = append(gateways, name)
		}
	}
	if len(gateways) < 2 {
		t.Fatalf("gateway replicas: %v, want two", gateways)
	}
	nginx, err := os.ReadFile(filepath.Join(root, "deploy", "nginx.conf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gateways {
		s := c.Services[g]
		if !strings.Contains(string(nginx), "server "+g+":8080") {
			t.Errorf("nginx.conf does not send to %s", g)
		}
		if !strings.Contains(s.Environment["DATABASE_URL"], "@postgres:5432/") || !strings.HasPrefix(s.Environment["REDIS_URL"], "redis://redis:6379") {
			t.Errorf("%s: DATABASE_URL %q, REDIS_URL %q: want the compose PostgreSQL and Redis", g, s.Environment["DATABASE_URL"], s.Environment["REDIS_URL"])
		}
		// The configuration the replica reads: the mounted file, with the replica's environment (what compose
		// would substitute stands in as a placeholder).
		var hostPath string
		for _, v := range s.Volumes {
			if src, dst, _ := strings.Cut(v, ":"); strings.HasPrefix(dst, s.Environment["SWITCHBOARD_CONFIG"]) {
				hostPath = filepath.Join(root, src)
			}
		}
		getenv := func(k string) string {
			v := s.Environment[k]
			if strings.HasPrefix(v, "${") {
				return "placeholder-of-at-least-32-characters"
			}
			return v
		}
		cfg, err := sbwire.LoadConfig(hostPath, getenv)
		if err != nil {
			t.Fatalf("%s: %v", g, err)
		}
		if cfg.Redis.URL == "" || cfg.Catalog.Len() == 0 {
			t.Errorf("%s: redis %q, %d models: want Redis and models", g, cfg.Redis.URL, cfg.Catalog.Len())
		}
	}
}
