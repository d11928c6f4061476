package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/switchboard-ai/switchboard/test/harness"
)

// hostileAnswerWithin bounds each answer of the hostile table. It detects hangs and unbounded work (a quadratic
// list took minutes), not speed: two shared cores under -race with the whole suite running are slow. How fast
// the answers are is measured without the race detector (docs/api.md).
const hostileAnswerWithin = 30 * time.Second

// hostilePathValues replace every path parameter of every route; they arrive as raw bytes (no client cleans
// them up).
var hostilePathValues = []string{
	"%00", "a%00b", "%FF", "%C3%28", "%ED%A0%80", strings.Repeat("a", 5000), "..%2F", "..%2F..%2Fkeys", "%2F",
	"gen-%00", "gen-vid-%FF", "00000000-0000-0000-0000-00000000000%00", strings.Repeat("f", 64) + "%00",
	"..", ".", "%20", "null", "-1", "99999999999999999999",
}

// hostileQueries are appended to every route.
var hostileQueries = []string{
	"", "?workspace_id=%00", "?workspace_id=%FF", "?workspace_id=zzz", "?workspace_id=00000000-0000-0000-0000-000000000000",
	"?id=%00", "?id=%FF", "?id=gen-" + strings.Repeat("9", 5000), "?id=gen-1-%00", "?limit=%00", "?offset=%FF",
	"?index=%00", "?include_disabled=%FF", "?%00=1", "?%FF", "?id=a&id=b",
}

// hostileBodies are sent to every route that takes a body.
func hostileBodies() []string {
	ids := func(n int, v func(i int) string) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`"` + v(i) + `"`)
		}
		return b.String()
	}
	big := ids(100_000, func(i int) string { return fmt.Sprintf("m%d", i) })
	hashes := ids(70_000, func(i int) string { return fmt.Sprintf("%x", i) }) // past 65,535 statement parameters
	return []string{
		``, `null`, `[]`, `"x"`, `5`, `{}`, `{"name":null}`, `{"name":5}`, `{"name":"\u0000"}`, `{"name":"a\u0000b"}`,
		`{"name":"\ud800"}`, "{\"name\":\"\xff\xfe\"}", `{"name":"` + strings.Repeat("n", 100_000) + `"}`,
		`{"name":"x","description":"\u0000"}`, `{"name":"x","slug":"\u0000"}`, `{"email":"a\u0000@b.c"}`,
		`{"email":"a@b.c","first_name":"\u0000"}`, `{"name":"x","workspace_id":"\u0000"}`,
		`{"name":"x","workspace_id":"zzz"}`, `{"name":"x","external":{"user":"\u0000"}}`,
		`{"name":"x","creator_user_id":"\u0000"}`, `{"name":"x","allowed_models":["\u0000"]}`,
		`{"name":"x","allowed_models":[` + big + `]}`, `{"name":"x","content_filters":[{"pattern":"\u0000","action":"block"}]}`,
		`{"name":"x","content_filters":[{"pattern":"a","action":"block","label":"\u0000"}]}`,
		`{"member_user_ids":["\u0000"]}`, `{"member_user_ids":[` + big + `]}`, `{"key_hashes":["\u0000"]}`,
		`{"key_hashes":[` + hashes + `]}`, `{"key_hashes":[null]}`, `{"member_user_ids":"x"}`,
		`{"config":{"\u0000":1}}`, `{"system":"\u0000"}`, `{"model":"a","\u0000":"b"}`, `{"model":"a/b","x":-1e-999999}`, `{"model":"a/b","x":[1` + strings.Repeat("0", 200) + `]}`, `{"temperature":"\u0000"}`,
		`{"requests_per_minute":null}`, `{"requests_per_minute":"x"}`, `{"limit":1e400}`, `{"disabled":null}`,
		`{"designated_version":-1}`, `{"status":"\u0000"}`, `{"designated_version":99999999999}`,
		`{"model":"x","input":"hi","provider":{"options":{"openai":{"a":["\u0000"]}}}}`,
		"{\"model\":\"x\",\"prompt\":\"p\",\"provider\":{\"options\":{\"openai\":{\"a\":[\"\xff\"]}}}}",
		`{"model":"x","prompt":"p","frame_images":[{"image_url":{"url":"https://a/\u0000"},"frame_type":"first_frame"}]}`,
		"{\"model\":\"x\",\"prompt\":\"p\",\"input_references\":[{\"type\":\"image_url\",\"image_url\":{\"url\":\"https://a/\xff\"}}]}",
		`{"model":"x","messages":[{"role":"user","content":"hi"}],"stop":["\u0000"],"tools":[{"type":"function","function":{"name":"\u0000"}}]}`,
		"{\"model\":\"x\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"models\":[\"\xff\"],\"provider\":{\"order\":[\"\xff\"]}}",
		`{"model":"x","messages":[{"role":"user","content":[{"type":"\u0000"},{"type":"image_url","image_url":{"url":"\u0000"}}]}],"tool_choice":{"\u0000":1}}`,
		`{"model":"x","messages":[{"role":"assistant","tool_calls":[{"id":"\u0000","function":{"name":"\u0000","arguments":"\u0000"}}]}]}`,
		`{"model":"x","input":"\u0000"}`, `{"model":"x","prompt":"\u0000"}`, `{"model":"x","messages":[{"role":"user","content":"\u0000"}]}`,
		strings.Repeat("[", 100_000), `{"a":` + strings.Repeat(`{"a":`, 10_000) + `1` + strings.Repeat("}", 10_001),
	}
}

// TestHostileInput sends malformed input of every kind to every route of the real router, on both dialects:
// never a 5xx, always the envelope, always promptly.
func TestHostileInput(t *testing.T) {
	harness.Dialects(t, func(t *testing.T, db harness.Option) {
		g := harness.Start(t, db)
		infer, hash := g.Key(t, nil)
		// Real entities, so that bodies and queries get past the lookup of what the path names.
		if r := g.Do(t, "POST", "/presets/x/chat/completions", g.Admin, `{"model":"a/b","system":"s"}`); r.Status != 200 {
			t.Fatalf("preset: %d %s", r.Status, r.Body)
		}
		gr := g.Do(t, "POST", "/guardrails", g.Admin, `{"name":"g"}`)
		if gr.Status != 201 {
			t.Fatalf("guardrail: %d %s", gr.Status, gr.Body)
		}
		real := map[string]string{":slug": "x", ":version": "1", ":hash": hash, ":jobId": "gen-vid-1-none",
			":id": gr.JSON(t)["data"].(map[string]any)["id"].(string)}
		routes := g.App.Server.Handler().(*gin.Engine).Routes()
		if len(routes) < 30 {
			t.Fatalf("only %d routes", len(routes))
		}
		bodies := hostileBodies()
		client := &http.Client{Timeout: hostileAnswerWithin}
		addr := serve(t, g) // as serve runs it: net/http's own answers go through the gateway's listener too
		send := func(t *testing.T, method, path, key, body string) {
			t.Helper()
			url := "http://" + addr + "/api/v1" + path
			if path == "/healthz" || path == "/readyz" {
				url = "http://" + addr + path
			}
			var rd io.Reader
			if body != "" {
				rd = strings.NewReader(body)
			}
			req, err := http.NewRequestWithContext(context.Background(), method, url, rd)
			if err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+key)
			start := time.Now()
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("%s %.200s: %v", method, path, err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			checkAnswer(t, fmt.Sprintf("%s %.200s body %.100q (%v)", method, path, body, time.Since(start)), resp, raw)
		}
		for _, r := range routes {
			path := withParams(r.Path, "", real)
			full := "/api/v1" + path
			if path == "/healthz" || path == "/readyz" {
				full = path
			}
			for _, trick := range []string{full + "/", strings.Replace(full, "/", "//", 2), full + "/..%2F", full + "/%2e%2e/keys"} {
				resp, raw := rawDo(t, addr, r.Method+" "+trick+" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+g.Admin+"\r\n\r\n")
				checkAnswer(t, r.Method+" "+trick, resp, raw)
			}
			resp, raw := rawDo(t, addr, r.Method+" "+full+" HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("h", 2<<20)+"\r\n\r\n")
			checkRefusedBeforeRouting(t, r.Method+" "+full+" with 2 MB of headers", resp, raw, http.StatusRequestHeaderFieldsTooLarge)
			for _, key := range []string{g.Admin, infer} {
				for _, v := range hostilePathValues {
					send(t, r.Method, withParams(r.Path, v, nil), key, "")
				}
				for _, q := range hostileQueries {
					send(t, r.Method, path+q, key, "")
				}
				if r.Method == http.MethodPost || r.Method == http.MethodPatch {
					for _, b := range bodies {
						send(t, r.Method, path, key, b)
					}
				}
			}
		}
	})
}

// withParams puts v, or the param's real value, in place of every :param of a route.
func withParams(route, v string, real map[string]string) string {
	parts := strings.Split(route, "/")
	for i, p := range parts {
		if strings.HasPrefix(p, ":") {
			parts[i] = v
			if r, ok := real[p]; ok {
				parts[i] = r
			}
		}
	}
	return strings.TrimPrefix(strings.Join(parts, "/"), "/api/v1")
}

// checkAnswer: below 500; an error is the envelope with error.code equal to the status.
func checkAnswer(t *testing.T, what string, resp *http.Response, raw []byte) {
	t.Helper()
	if resp.StatusCode >= 500 {
		t.Errorf("%s: status %d: %.300s", what, resp.StatusCode, raw)
		return
	}
	checkEnvelope(t, what, resp, raw)
}

// checkEnvelope: an error is the envelope with error.code equal to the status.
func checkEnvelope(t *testing.T, what string, resp *http.Response, raw []byte) {
	t.Helper()
	if resp.StatusCode < 400 {
		return
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s: status %d with Content-Type %q: %.300s", what, resp.StatusCode, ct, raw)
		return
	}
	var env struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(bytes.NewReader(raw)).Decode(&env); err != nil || env.Error.Code != resp.StatusCode ||
		env.Error.Message == "" {
		t.Errorf("%s: status %d outside the envelope: %.300s", what, resp.StatusCode, raw)
	}
}

// TestMalformedIsMissing: a malformed id is answered exactly as a missing one; text a database cannot store and
// lists past the bound are a 400 naming the field, on both dialects.
func TestMalformedIsMissing(t *testing.T) {
	harness.Dialects(t, func(t *testing.T, db harness.Option) {
		g := harness.Start(t, db)
		many := `["` + strings.Repeat(`m", "`, 100_000) + `m"]`
		gr := g.Do(t, "POST", "/guardrails", g.Admin, `{"name":"g"}`).JSON(t)["data"].(map[string]any)["id"].(string)
		tests := []struct {
			method, path, body string
			status             int
			want               string // in error.message; for 404s the message of the missing id
		}{
			{"GET", "/generation?id=%00", "", 404, "generation not found"},
			{"GET", "/generation?id=gen-0-%FF", "", 404, "generation not found"},
			{"GET", "/generation/content?id=%00", "", 404, "generation not found"},
			{"GET", "/videos/%00", "", 404, "video job not found"},
			{"GET", "/videos/gen-vid-%FF/content", "", 404, "video job not found"},
			{"GET", "/keys/%FF", "", 404, "API key not found"},
			{"DELETE", "/keys/" + strings.Repeat("A", 64), "", 404, "API key not found"},
			{"GET", "/guardrails/%00", "", 404, "guardrail not found"},
			{"GET", "/guardrails/zzz/assignments/keys", "", 404, "guardrail not found"},
			{"GET", "/guardrails?workspace_id=zzz", "", 400, "workspace_id"},
			{"GET", "/guardrails?workspace_id=00000000-0000-0000-0000-000000000000", "", 400, "workspace_id"},
			{"GET", "/keys?workspace_id=00000000-0000-0000-0000-000000000000", "", 400, "workspace_id"},
			{"GET", "/presets/x?workspace_id=%00", "", 400, "workspace_id"},
			{"GET", "/presets?limit=%FF", "", 400, "limit"},
			{"POST", "/guardrails", `{"name":"a","allowed_models":` + many + `}`, 400, "allowed_models: must have at most 1000 entries"},
			{"POST", "/guardrails/" + gr + "/assignments/keys", `{"key_hashes":` + many + `}`, 400, "key_hashes: must have at most 1000"},
			{"POST", "/guardrails", `{"name":"a","content_filters":[` + strings.Repeat(`{},`, 1000) + `{}]}`, 400, "content_filters: must have at most 1000 entries"},
			{"POST", "/presets/p/chat/completions", `{"model":"a/b","x":[` + strings.Repeat(`[`+strings.Repeat(`1,`, 999)+`1],`, 30) + `[]]}`, 400, "body: must have at most 20000 values in all"},
			{"POST", "/guardrails/" + gr + "/assignments/members", `{"member_user_ids":["a","\u0000"]}`, 400, "member_user_ids[1]: must be valid UTF-8"},
			{"POST", "/guardrails", `{"name":"a","content_filters":[{"pattern":"a","action":"block","label":"\u0000"}]}`, 400, "content_filters[0].label:"},
			{"PATCH", "/guardrails/" + gr, `{"description":"\u0000"}`, 400, "description:"},
			{"POST", "/keys", `{"name":"a\u0000"}`, 400, "name: must be valid UTF-8"},
			{"POST", "/keys", `{"name":"a","external":{"user":"\u0000"}}`, 400, "external.user:"},
			{"POST", "/workspaces", `{"name":"\u0000"}`, 400, "name:"},
			{"POST", "/organization/members", `{"email":"a@b.c","last_name":"\u0000"}`, 400, "last_name:"},
			{"POST", "/presets/p/chat/completions", `{"model":"a/b","system":"\u0000"}`, 400, "system:"},
			{"POST", "/presets/p/chat/completions", `{"model":"a/b","metadata":{"\u0000":1}}`, 400, "metadata.(a key):"},
			{"PATCH", "/presets/p", `{"name":"\u0000"}`, 400, "name:"},
			{"PATCH", "/presets/p", `{"designated_version":99999999999}`, 400, "designated_version"},
			{"POST", "/presets/p/chat/completions", `{"model":"a/b","top_k":-1e-999999}`, 400, "top_k: must be a number of at most 64"},
			{"POST", "/organization/members", `{"email":"a@b.c","first_name":"` + strings.Repeat("é", 101) + `"}`, 400, "first_name: must be at most 100 characters"},
			{"POST", "/keys", `{"name":"a","external":{"user":"` + strings.Repeat("u", 257) + `"}}`, 400, "external.user: must be at most 256"},
			{"POST", "/guardrails", `{"name":"a","content_filters":[{"pattern":"a","action":"flag","label":"` + strings.Repeat("l", 101) + `"}]}`, 400, "content_filters[0].label: must be at most 100"},
			{"POST", "/guardrails/" + gr + "/assignments/keys/remove", `{"key_hashes":["` + strings.Repeat("f", 129) + `"]}`, 400, "key_hashes[0]: must be a non-empty string of at most 128"},
		}
		if r := g.Do(t, "POST", "/presets/p/chat/completions", g.Admin, `{"model":"a/b"}`); r.Status != 200 {
			t.Fatalf("preset: %d %s", r.Status, r.Body)
		}
		for _, tt := range tests {
			var body any
			if tt.body != "" {
				body = tt.body
			}
			e := harness.AssertError(t, g.Do(t, tt.method, tt.path, g.Admin, body), tt.status)
			if !strings.Contains(e["message"].(string), tt.want) {
				t.Errorf("%s %.80s: message %q, want %q", tt.method, tt.path, e["message"], tt.want)
			}
		}
	})
}

// TestEveryAnswerInTheEnvelope sends raw requests to the server as serve runs it (its own listener): what the
// router answers (no route, no such method) and what Gin would have redirected (a trailing slash, ..%2F, double
// slashes) are all the envelope. What net/http refuses before any route is matched (a request line, URL or header it
// cannot parse, headers past its limit, a transfer coding it does not know) it answers itself, in plain text, and
// closes the connection (docs/http.md).
func TestEveryAnswerInTheEnvelope(t *testing.T) {
	t.Parallel()
	g := harness.Start(t)
	addr := serve(t, g)

	auth := "Authorization: Bearer " + g.Admin + "\r\n"
	tests := []struct {
		name, request string
		status        int
		plain         bool // net/http's own refusal, before routing
	}{
		{"bad percent-escape", "GET /api/v1/presets/%zz HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n", 400, true},
		{"bad escape in query", "GET /api/v1/keys?x=%zz%00 HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n", 200, false},
		{"no Host", "GET /api/v1/keys HTTP/1.1\r\n" + auth + "\r\n", 400, true},
		{"two Hosts", "GET /api/v1/keys HTTP/1.1\r\nHost: a\r\nHost: b\r\n" + auth + "\r\n", 400, true},
		{"oversized headers", "GET /api/v1/keys HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 2<<20) + "\r\n\r\n", 431, true},
		{"unknown transfer coding", "POST /api/v1/keys HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: zip\r\n\r\n", 501, true},
		{"empty Content-Length", "POST /api/v1/keys HTTP/1.1\r\nHost: x\r\nContent-Length: \r\n\r\n", 400, true},
		// A body net/http cannot read to its end fails the handler's read: the envelope's 400, never a key made of it.
		{"chunk size ended by a bare LF", "POST /api/v1/keys HTTP/1.1\r\nHost: x\r\n" + auth + "Transfer-Encoding: chunked\r\n\r\n" +
			"c\n{\"name\":\"k\"}\r\n0\r\n\r\n", 400, false},
		{"junk trailer line", "POST /api/v1/keys HTTP/1.1\r\nHost: x\r\n" + auth + "Transfer-Encoding: chunked\r\n\r\n" +
			"c\r\n{\"name\":\"k\"}\r\n0\r\nnot a field\r\n\r\n", 400, false},
		{"chunk size of 20 digits", "POST /api/v1/keys HTTP/1.1\r\nHost: x\r\n" + auth + "Transfer-Encoding: chunked\r\n\r\n" +
			"0000000000000000000c\r\n{\"name\":\"k\"}\r\n0\r\n\r\n", 400, false},
		{"dot-dot", "GET /api/v1/keys/..%2F HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n", 404, false},
		{"trailing slash", "GET /api/v1/keys/ HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n", 404, false},
		{"double slash", "GET /api/v1//keys HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n", 404, false},
		{"upper case", "GET /API/V1/KEYS HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n", 404, false},
		{"wrong method", "PUT /api/v1/keys HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n", 405, false},
		{"huge Range", "GET /api/v1/videos/gen-vid-1-x/content HTTP/1.1\r\nHost: x\r\n" + auth + "Range: bytes=" +
			strings.Repeat("1-2,", 15_000) + "3-4\r\n\r\n", 416, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, raw := rawDo(t, addr, tt.request)
			if tt.plain {
				checkRefusedBeforeRouting(t, tt.name, resp, raw, tt.status)
				return
			}
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, raw)
			}
			checkEnvelope(t, tt.name, resp, raw)
		})
	}
}

// checkRefusedBeforeRouting: net/http's own answer to a request it would not route, status, in plain text, and the
// connection closed.
func checkRefusedBeforeRouting(t *testing.T, what string, resp *http.Response, raw []byte, status int) {
	t.Helper()
	if resp.StatusCode != status || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") || !resp.Close {
		t.Errorf("%s: %d %v %.300s, want net/http's plain %d that closes", what, resp.StatusCode, resp.Header, raw, status)
	}
}

// TestPatchNull: null clears what can be cleared, as docs/api.md says, and is a 400 naming the field where it
// cannot; never a silent 200 that changes nothing.
func TestPatchNull(t *testing.T) {
	t.Parallel()
	g := harness.Start(t)
	_, hash := g.Key(t, nil)
	if r := g.Do(t, "POST", "/presets/p/chat/completions", g.Admin, `{"model":"a/b"}`); r.Status != 200 {
		t.Fatalf("preset: %d %s", r.Status, r.Body)
	}
	gr := g.Do(t, "POST", "/guardrails", g.Admin, `{"name":"g"}`).JSON(t)["data"].(map[string]any)["id"].(string)
	for _, tt := range []struct{ path, body, field string }{
		{"/presets/p", `{"name":null}`, "name"},
		{"/presets/p", `{"status":null}`, "status"},
		{"/presets/p", `{"designated_version":null}`, "designated_version"},
		{"/keys/" + hash, `{"name":null}`, "name"},
		{"/keys/" + hash, `{"disabled":null}`, "disabled"},
		{"/keys/" + hash, `{"include_byok_in_limit":null}`, "include_byok_in_limit"},
		{"/guardrails/" + gr, `{"name":null}`, "name"},
		{"/guardrails/" + gr, `{"include_byok_in_budgets":null}`, "include_byok_in_budgets"},
	} {
		e := harness.AssertError(t, g.Do(t, "PATCH", tt.path, g.Admin, tt.body), 400)
		if !strings.HasPrefix(e["message"].(string), tt.field+": ") {
			t.Errorf("PATCH %s %s: message %q does not name %s", tt.path, tt.body, e["message"], tt.field)
		}
	}
	if r := g.Do(t, "PATCH", "/keys/"+hash, g.Admin, `{"requests_per_minute":7}`); r.Status != 200 ||
		jsonString(r.JSON(t)["data"].(map[string]any)["requests_per_minute"]) != "7" {
		t.Fatalf("set requests_per_minute: %d %s", r.Status, r.Body)
	}
	r := g.Do(t, "PATCH", "/keys/"+hash, g.Admin, `{"requests_per_minute":null}`)
	if r.Status != 200 || r.JSON(t)["data"].(map[string]any)["requests_per_minute"] != nil {
		t.Fatalf("null did not clear requests_per_minute: %d %s", r.Status, r.Body)
	}
	if r := g.Do(t, "PATCH", "/presets/p", g.Admin, `{"description":"d"}`); r.Status != 200 {
		t.Fatalf("set description: %d %s", r.Status, r.Body)
	}
	r = g.Do(t, "PATCH", "/presets/p", g.Admin, `{"description":null}`)
	if r.Status != 200 || r.JSON(t)["data"].(map[string]any)["description"] != nil {
		t.Fatalf("null did not clear description: %d %s", r.Status, r.Body)
	}
}

// serve runs the gateway's server as serve does, on its own listener, until the test ends; it returns the address.
func serve(t *testing.T, g *harness.Gateway) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.App.Server.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

// rawDo sends request as raw bytes on a new connection and reads the answer.
func rawDo(t *testing.T, addr, request string) (*http.Response, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(hostileAnswerWithin))
	go func() { _, _ = io.WriteString(conn, request) }() // the server may answer before it has read it all
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%.100q: %v", request, err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, raw
}
