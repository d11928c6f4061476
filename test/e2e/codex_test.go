package e2e_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/test/fakes"
	"github.com/switchboard-ai/switchboard/test/harness"
	"github.com/switchboard-ai/switchboard/test/logsink"
)

// TestCodex runs the Codex CLI (@openai/codex, its native binary), unchanged, with a custom model provider pointing
// at the gateway (wire_api responses): `codex exec` runs the fake's tool call and prints the fake's answer to its
// output, over WebSocket, which it dials first
// (the gateway upgrades GET /responses: no fallback, no retries), and over HTTP when the provider does not
// support WebSocket; each through a Responses upstream and a chat-only one (translated). The WebSocket runs show
// in the gateway's access log as a 101 on GET /responses, and no run reconnects.
func TestCodex(t *testing.T) {
	t.Parallel()
	codex, err := filepath.Abs("js/node_modules/@openai/codex/bin/codex.js")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(codex); err != nil {
		t.Fatalf("the Codex CLI is not installed: run `npm ci` in test/e2e/js: %v", err)
	}
	native, chatOnly := fakes.NewOpenAI(t, "sk-resp"), fakes.NewOpenAI(t, "sk-chat")
	var log logsink.Buffer
	g := harness.Start(t, harness.WithConfig(responsesConfig(native, chatOnly)), harness.WithLog(&log))
	key, _ := g.Key(t, nil)
	for _, tt := range []struct {
		name, model string
		websocket   bool
	}{
		{"websocket, passed through", "resp/native", true},
		{"websocket, translated", "resp/chat", true},
		{"http, passed through", "resp/native", false},
		{"http, translated", "resp/chat", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			config := `model = "` + tt.model + `"
model_provider = "switchboard"

[model_providers.switchboard]
name = "Switchboard"
base_url = "` + g.URL + `"
wire_api = "responses"
env_key = "SB_KEY"
supports_websockets = ` + map[bool]string{true: "true", false: "false"}[tt.websocket] + "\n"
			if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "node", codex, "exec", "--json", "--skip-git-repo-check", "Say hi")
			cmd.Dir, cmd.Stdin = home, strings.NewReader("")
			cmd.Env = append(os.Environ(), "CODEX_HOME="+home, "HOME="+home, "SB_KEY="+key)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("codex: %v\n%s", err, out)
			}
			var answer string
			for line := range strings.Lines(string(out)) {
				var ev struct {
					Type string
					Item struct{ Type, Text string }
				}
				if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == "item.completed" && ev.Item.Type == "agent_message" {
					answer = ev.Item.Text
				}
			}
			// The fake calls the first tool it is offered (Codex's shell, with arguments it cannot run), then reads
			// the tool's output back: a function call round trip through Codex.
			if !strings.HasPrefix(answer, "The tool said: ") || strings.Contains(string(out), "Reconnecting") ||
				strings.Contains(string(out), "Falling back") {
				t.Fatalf("codex printed:\n%s", out)
			}
		})
	}
	// Each run is two calls (the tool call, then the answer), each through its upstream.
	if n, m := len(native.Requests()), len(chatOnly.Requests()); n != 4 || m != 4 {
		t.Errorf("the upstreams got %d and %d calls, want 4 each", n, m)
	}
	upgraded := 0
	for line := range strings.Lines(log.String()) {
		var l struct {
			Msg, Method, Path string
			Status            int
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "request" && l.Method == "GET" && l.Path == "/api/v1/responses" &&
			l.Status == 101 {
			upgraded++
		}
	}
	if upgraded != 2 {
		t.Errorf("the WebSocket runs upgraded %d connections, want one each", upgraded)
	}
}
