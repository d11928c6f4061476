// Package console_test drives the web console (adapters/console) of a real gateway: its handlers over HTTP, and
// its pages in a real browser.
package console_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/test/fakes"
	"github.com/switchboard-ai/switchboard/test/harness"
)

// hostilePrompt is a prompt that would run script if the console rendered it as markup.
const hostilePrompt = `<script>document.title="pwned"</script><img src=x onerror="document.title='pwned'">`

// gateway is a gateway with a fake OpenAI-compatible upstream, an inference key, and the helpers the tests share.
type gateway struct {
	*harness.Gateway
	key, keyHash string
}

func start(t *testing.T, opts ...harness.Option) *gateway {
	t.Helper()
	oai := fakes.NewOpenAI(t, "sk-up")
	opts = append(opts, harness.WithConfig(fmt.Sprintf(`
providers:
  - {slug: chatfake, kind: openai, base_url: %s, api_key: sk-up}
models:
  - {id: chat/fake, modality: chat, endpoints: [{provider: chatfake, upstream_model: fake-1, pricing: {per_million_prompt_tokens: 1, per_million_completion_tokens: 2}}]}
  - {id: video/fake, modality: video, endpoints: [{provider: chatfake, upstream_model: sora-2, pricing: {per_second: 0.1}}]}
`, oai.BaseURL())))
	g := harness.Start(t, opts...)
	key, hash := g.Key(t, map[string]any{"name": "app key"})
	return &gateway{Gateway: g, key: key, keyHash: hash}
}

// call makes a chat call with prompt and returns its generation id once its record is stored.
func (g *gateway) call(t *testing.T, prompt string) string {
	t.Helper()
	id := g.send(t, prompt)
	g.stored(t, id)
	return id
}

// send makes a chat call with prompt and returns its generation id.
func (g *gateway) send(t *testing.T, prompt string) string {
	t.Helper()
	r := g.Do(t, "POST", "/chat/completions", g.key, map[string]any{"model": "chat/fake",
		"messages": []any{map[string]any{"role": "user", "content": prompt}}})
	id := r.Header.Get("X-Generation-Id")
	if r.Status != http.StatusOK || id == "" {
		t.Fatalf("chat: %d %s", r.Status, r.Body)
	}
	return id
}

// stored waits for the record of a call to be written from the spool to the database.
func (g *gateway) stored(t *testing.T, id string) {
	t.Helper()
	harness.Eventually(t, 10*time.Second, func() bool { return g.Do(t, "GET", "/generation?id="+id, g.key, nil).Status == 200 })
}

// browser is an HTTP client with a cookie jar, as a browser keeps the console's session, that does not follow
// redirects (the tests look at them).
type browser struct {
	t    *testing.T
	root string
	c    *http.Client
}

func newBrowser(t *testing.T, root string) *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, root: root, c: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type page struct {
	Status int
	Header http.Header
	Body   string
}

// do sends a request; a form is sent as a browser posts one from a console page, unless headers say otherwise.
func (b *browser) do(method, path string, form url.Values, headers ...string) page {
	b.t.Helper()
	req, err := http.NewRequest(method, b.root+path, strings.NewReader(form.Encode()))
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", b.root)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return page{Status: resp.StatusCode, Header: resp.Header, Body: string(raw)}
}

// signIn signs in with key and returns the CSRF token of the session's pages.
func (b *browser) signIn(key string) string {
	b.t.Helper()
	p := b.do("POST", "/console/login", url.Values{"key": {key}})
	if p.Status != http.StatusSeeOther || p.Header.Get("Location") != "/console/overview" {
		b.t.Fatalf("sign in: %d %s", p.Status, p.Body)
	}
	return b.csrf()
}

var csrfInput = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (b *browser) csrf() string {
	b.t.Helper()
	p := b.do("GET", "/console/keys", nil)
	m := csrfInput.FindStringSubmatch(p.Body)
	if p.Status != http.StatusOK || m == nil {
		b.t.Fatalf("keys page: %d %s", p.Status, p.Body)
	}
	return m[1]
}
