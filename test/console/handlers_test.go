package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/test/harness"
)

// TestConsoleSignIn: only a live management key opens a session; the cookie is HttpOnly and SameSite=Strict (and
// not Secure over plain HTTP); pages without a session, after sign-out, or once the key is disabled send the
// browser to the sign-in page.
func TestConsoleSignIn(t *testing.T) {
	harness.Dialects(t, func(t *testing.T, db harness.Option) { signIn(t, start(t, db)) })
}

func signIn(t *testing.T, g *gateway) {
	for _, tt := range []struct {
		name, key string
		status    int
		body      string
	}{
		{"no key", "", http.StatusUnauthorized, "not a live API key"},
		{"wrong key", "sk-sb-v1-nope", http.StatusUnauthorized, "not a live API key"},
		{"inference key", g.key, http.StatusForbidden, "takes a management key"},
		{"management key", g.Admin, http.StatusSeeOther, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newBrowser(t, g.Root).do("POST", "/console/login", url.Values{"key": {tt.key}})
			if p.Status != tt.status || !strings.Contains(p.Body, tt.body) {
				t.Fatalf("%d %s", p.Status, p.Body)
			}
			cookie := p.Header.Get("Set-Cookie")
			if tt.status != http.StatusSeeOther {
				if cookie != "" {
					t.Fatalf("a refused sign-in set %q", cookie)
				}
				return
			}
			for _, want := range []string{"switchboard_console=", "Path=/console/", "HttpOnly", "SameSite=Strict"} {
				if !strings.Contains(cookie, want) {
					t.Errorf("cookie %q lacks %q", cookie, want)
				}
			}
			if strings.Contains(cookie, "Secure") || strings.Contains(cookie, tt.key) {
				t.Errorf("cookie %q: Secure over plain HTTP, or the key itself", cookie)
			}
		})
	}

	toLogin := func(t *testing.T, b *browser, why string) {
		t.Helper()
		for _, path := range []string{"/console/", "/console/overview", "/console/generations", "/console/keys", "/console/health"} {
			if p := b.do("GET", path, nil); p.Status != http.StatusSeeOther || p.Header.Get("Location") != "/console/login" {
				t.Errorf("%s %s: %d %s", why, path, p.Status, p.Header.Get("Location"))
			}
		}
	}
	toLogin(t, newBrowser(t, g.Root), "no session")

	b := newBrowser(t, g.Root)
	csrf := b.signIn(g.Admin)
	if p := b.do("POST", "/console/logout", url.Values{"csrf": {csrf}}); p.Status != http.StatusSeeOther {
		t.Fatalf("sign out: %d %s", p.Status, p.Body)
	}
	toLogin(t, b, "signed out")

	// A key disabled through the API (as on another replica) ends the sessions opened with it.
	v, second, err := g.App.Accounts.CreateKey(context.Background(), account.Principal{}, account.KeySpec{Name: "second admin", Management: true})
	if err != nil {
		t.Fatal(err)
	}
	hash := v.Hash
	b = newBrowser(t, g.Root)
	b.signIn(second)
	if r := g.Do(t, "PATCH", "/keys/"+hash, g.Admin, map[string]any{"disabled": true}); r.Status != http.StatusOK {
		t.Fatalf("disable: %d %s", r.Status, r.Body)
	}
	toLogin(t, b, "key disabled")
}

// TestConsoleWrites: a write needs its session's CSRF token and, from a browser, the console's own origin.
func TestConsoleWrites(t *testing.T) {
	t.Parallel()
	g := start(t)
	b := newBrowser(t, g.Root)
	csrf := b.signIn(g.Admin)
	other := newBrowser(t, g.Root).signIn(g.Admin)
	if other == csrf {
		t.Fatal("two sessions share a CSRF token")
	}
	for _, tt := range []struct {
		name, csrf string
		headers    []string
		status     int
	}{
		{"same origin with the token", csrf, nil, http.StatusCreated},
		{"no token", "", nil, http.StatusForbidden},
		{"another session's token", other, nil, http.StatusForbidden},
		{"another origin", csrf, []string{"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{"another port", csrf, []string{"Origin", "http://127.0.0.1:1", "Sec-Fetch-Site", "same-site"}, http.StatusForbidden},
		{"cross-site fetch", csrf, []string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{"same-site fetch", csrf, []string{"Sec-Fetch-Site", "same-site"}, http.StatusForbidden},
		{"Origin null (no referrer), with the token", csrf, []string{"Origin", "null"}, http.StatusCreated},
		{"null origin from another site", csrf, []string{"Origin", "null", "Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{"older browser, another origin", csrf, []string{"Sec-Fetch-Site", "", "Origin", "https://evil.example"}, http.StatusForbidden},
		{"not a browser, with the token", csrf, []string{"Origin", "", "Sec-Fetch-Site", ""}, http.StatusCreated},
	} {
		t.Run(tt.name, func(t *testing.T) {
			form := url.Values{"name": {tt.name}}
			if tt.csrf != "" {
				form.Set("csrf", tt.csrf)
			}
			p := b.do("POST", "/console/keys", form, tt.headers...)
			if p.Status != tt.status {
				t.Fatalf("%d %s", p.Status, p.Body)
			}
			created := strings.Contains(p.Body, `id="secret"`)
			if created != (tt.status == http.StatusCreated) {
				t.Fatalf("key shown: %v, status %d", created, p.Status)
			}
		})
	}
	// Bad input is a 400 naming the field, on the form's page.
	for _, tt := range []struct{ field, value, want string }{
		{"name", "a\x00b", "valid UTF-8"}, {"name", "\xff", "valid UTF-8"}, {"name", " ", "1 to 200 characters"},
		{"limit", "-3", "dollars"}, {"limit_reset", "hourly", "daily, weekly, monthly"},
	} {
		form := url.Values{"csrf": {csrf}, "name": {"ok"}}
		form.Set(tt.field, tt.value)
		if p := b.do("POST", "/console/keys", form); p.Status != http.StatusBadRequest || !strings.Contains(p.Body, tt.want) {
			t.Errorf("%s=%q: %d %s", tt.field, tt.value, p.Status, p.Body)
		}
	}
	// A sign-in from another site is refused too: it would sign the browser in to the other site's key. It has no
	// CSRF token to fall back on, so Origin "null" (a page with no referrer, a sandboxed frame) is refused where a
	// browser sends no Sec-Fetch-Site.
	for _, hdr := range [][]string{
		{"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"},
		{"Origin", "null", "Sec-Fetch-Site", ""},
		{"Origin", "https://evil.example", "Sec-Fetch-Site", ""},
	} {
		if p := newBrowser(t, g.Root).do("POST", "/console/login", url.Values{"key": {g.Admin}}, hdr...); p.Status != http.StatusForbidden {
			t.Fatalf("cross-origin sign-in %v: %d", hdr, p.Status)
		}
	}
	if p := newBrowser(t, g.Root).do("POST", "/console/login", url.Values{"key": {g.Admin}}, "Origin", g.Root, "Sec-Fetch-Site", ""); p.Status != http.StatusSeeOther {
		t.Fatalf("sign-in from the console's own page in a browser without Sec-Fetch-Site: %d", p.Status)
	}
}

// TestConsoleHeaders: every console response carries the strict policy, signed in or not, found or not.
func TestConsoleHeaders(t *testing.T) {
	t.Parallel()
	g := start(t)
	b := newBrowser(t, g.Root)
	b.signIn(g.Admin)
	want := map[string]string{
		"Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self'; media-src 'self'; " +
			"form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
		"X-Content-Type-Options": "nosniff",
		"Referrer-Policy":        "same-origin",
		"X-Frame-Options":        "DENY",
	}
	for _, tt := range []struct {
		path   string
		status int
		ctype  string
	}{
		{"/console/login", 200, "text/html; charset=utf-8"},
		{"/console/overview", 200, "text/html; charset=utf-8"},
		{"/console/generations", 200, "text/html; charset=utf-8"},
		{"/console/keys", 200, "text/html; charset=utf-8"},
		{"/console/health", 200, "text/html; charset=utf-8"},
		{"/console/videos", 200, "text/html; charset=utf-8"},
		{"/console/workspaces/default", 200, "text/html; charset=utf-8"},
		{"/console/workspaces/nope", 404, "text/html; charset=utf-8"},
		{"/console/workspaces/%ff", 400, "text/html; charset=utf-8"},
		{"/console/videos?after=%00", 400, "text/html; charset=utf-8"},
		{"/console/videos/gen-vid-%00/content", 400, "text/html; charset=utf-8"},
		{"/console/static/console.css", 200, "text/css; charset=utf-8"},
		{"/console/static/", 404, ""},
		{"/console/nothing-here", 404, ""},
		{"/console", 301, ""},
		{"/console/generations?status=abc", 400, "text/html; charset=utf-8"},
		{"/console/generations?model=a%00b", 400, "text/html; charset=utf-8"},
		{"/console/generations?session=%ff", 400, "text/html; charset=utf-8"},
		{"/console/generations/gen-%00", 400, "text/html; charset=utf-8"},
		{"/console/keys/%ff%fe", 400, "text/html; charset=utf-8"},
	} {
		t.Run(tt.path, func(t *testing.T) {
			p := b.do("GET", tt.path, nil)
			if p.Status != tt.status || tt.ctype != "" && p.Header.Get("Content-Type") != tt.ctype {
				t.Fatalf("%d %q %s", p.Status, p.Header.Get("Content-Type"), p.Body)
			}
			if strings.Contains(p.Body, `<a href="console.css">`) {
				t.Fatalf("a folder listed: %s", p.Body)
			}
			for k, v := range want {
				if got := p.Header.Get(k); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
		})
	}
}

// TestConsoleEscaping: stored texts (a caller's prompt, a key's name) are shown as text on every page that shows
// them, never as markup.
func TestConsoleEscaping(t *testing.T) {
	t.Parallel()
	g := start(t)
	id := g.call(t, hostilePrompt)
	g.Key(t, map[string]any{"name": hostilePrompt})
	// A preset whose system prompt and configuration hold markup, in two versions: the difference shows both.
	for _, user := range []string{"a", hostilePrompt} {
		body := map[string]any{"model": "chat/fake", "stop": []string{user}, "messages": []any{map[string]any{"role": "system", "content": hostilePrompt + user}}}
		if r := g.Do(t, "POST", "/presets/hostile/chat/completions", g.key, body); r.Status != http.StatusOK {
			t.Fatalf("preset: %d %s", r.Status, r.Body)
		}
	}
	b := newBrowser(t, g.Root)
	b.signIn(g.Admin)
	for _, path := range []string{"/console/generations/" + id, "/console/keys", "/console/overview", "/console/generations", "/console/presets/hostile"} {
		t.Run(path, func(t *testing.T) {
			p := b.do("GET", path, nil)
			if p.Status != http.StatusOK {
				t.Fatalf("%d %s", p.Status, p.Body)
			}
			if strings.Contains(p.Body, "<script>") || strings.Contains(p.Body, "<img") {
				t.Fatalf("markup from a stored text: %s", p.Body)
			}
		})
	}
	if p := b.do("GET", "/console/generations/"+id, nil); !strings.Contains(p.Body, "&lt;script&gt;document.title=&#34;pwned&#34;&lt;/script&gt;&lt;img src=x onerror=") {
		t.Fatalf("the prompt is not shown as text: %s", p.Body)
	}
	// The configuration's JSON in the difference is the stored text, escaped once by the page (not \u003c).
	if p := b.do("GET", "/console/presets/hostile", nil); strings.Contains(p.Body, `\u003c`) || !strings.Contains(p.Body, `&#34;&lt;script&gt;document.title=\&#34;pwned\&#34;`) {
		t.Fatalf("the configuration is not shown as stored: %s", p.Body)
	}
}

// TestConsoleWorkspace: a workspace's page renames it, sets and deletes its budgets, adds and removes members, and
// shows why it cannot be deleted while it holds a key (409); bad input is a 4xx naming the field, on the page.
func TestConsoleWorkspace(t *testing.T) {
	t.Parallel()
	g := start(t)
	id := g.Workspace(t, "team")
	member := g.Do(t, "POST", "/organization/members", g.Admin, map[string]any{"email": "m@example.com"}).JSON(t)["data"].(map[string]any)["id"].(string)
	g.Key(t, map[string]any{"name": "team key", "workspace_id": id})
	empty := g.Workspace(t, "spare")
	b := newBrowser(t, g.Root)
	csrf := b.signIn(g.Admin)
	page := "/console/workspaces/" + id
	for _, tt := range []struct {
		name   string
		form   url.Values
		status int
		shows  string // on the page after the write (its redirect followed), or on the refusal's page
	}{
		{"rename", url.Values{"action": {"rename"}, "name": {"Team <b>A</b>"}}, http.StatusSeeOther, "Workspace Team &lt;b&gt;A&lt;/b&gt;"},
		{"empty name", url.Values{"action": {"rename"}, "name": {" "}}, http.StatusBadRequest, "1 to 100 characters"},
		{"set a budget", url.Values{"action": {"set_budget"}, "interval": {"daily"}, "limit": {"2.5"}}, http.StatusSeeOther, "<td>daily</td><td class=\"n\">$2.5</td><td>not counted</td>"},
		{"with BYOK", url.Values{"action": {"set_budget"}, "interval": {"monthly"}, "limit": {"10"}, "include_byok": {"on"}}, http.StatusSeeOther, "<td>monthly</td><td class=\"n\">$10</td><td>counted</td>"},
		{"bad interval", url.Values{"action": {"set_budget"}, "interval": {"hourly"}, "limit": {"1"}}, http.StatusBadRequest, "daily, weekly, monthly"},
		{"no limit", url.Values{"action": {"set_budget"}, "interval": {"weekly"}}, http.StatusBadRequest, "is required: an amount in dollars"},
		{"bad limit", url.Values{"action": {"set_budget"}, "interval": {"weekly"}, "limit": {"lots"}}, http.StatusBadRequest, "amount in dollars"},
		{"delete a budget", url.Values{"action": {"delete_budget"}, "interval": {"monthly"}}, http.StatusSeeOther, "<td>daily</td>"},
		{"delete it again", url.Values{"action": {"delete_budget"}, "interval": {"monthly"}}, http.StatusNotFound, "no budget for this interval"},
		{"add a member", url.Values{"action": {"add_members"}, "members": {member + "\n"}}, http.StatusSeeOther, `value="` + member + `"`},
		{"add no one known", url.Values{"action": {"add_members"}, "members": {"user_nope"}}, http.StatusBadRequest, "user_ids"},
		{"remove a member", url.Values{"action": {"remove_members"}, "member": {member}}, http.StatusSeeOther, "No member."},
		{"delete while it holds a key", url.Values{"action": {"delete"}}, http.StatusConflict, "still has API keys"},
		{"no action", url.Values{}, http.StatusBadRequest, "must be rename, delete"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.form.Set("csrf", csrf)
			p := b.do("POST", page, tt.form)
			if p.Status != tt.status {
				t.Fatalf("%d %s", p.Status, p.Body)
			}
			if p.Status == http.StatusSeeOther {
				p = b.do("GET", p.Header.Get("Location"), nil)
			}
			if !strings.Contains(p.Body, tt.shows) {
				t.Fatalf("the page lacks %q:\n%s", tt.shows, p.Body)
			}
		})
	}
	if p := b.do("POST", "/console/workspaces/"+id, url.Values{"action": {"rename"}, "name": {"x"}}); p.Status != http.StatusForbidden {
		t.Fatalf("a write without its token: %d", p.Status)
	}
	// A workspace without keys is deleted, and the list no longer has it.
	p := b.do("POST", "/console/workspaces/"+empty, url.Values{"csrf": {csrf}, "action": {"delete"}})
	if p.Status != http.StatusSeeOther || p.Header.Get("Location") != "/console/workspaces" {
		t.Fatalf("delete: %d %s", p.Status, p.Header.Get("Location"))
	}
	if p := b.do("GET", "/console/workspaces", nil); strings.Contains(p.Body, empty) {
		t.Fatal("the deleted workspace is still listed")
	}
	if p := b.do("GET", "/console/workspaces/"+empty, nil); p.Status != http.StatusNotFound {
		t.Fatalf("the deleted workspace's page: %d", p.Status)
	}
}

// TestConsolePaging: a list longer than a page (100) pages by its own offset parameter, with links to the pages
// around it; a preset's versions open at the newest, and the difference at its last two.
func TestConsolePaging(t *testing.T) {
	t.Parallel()
	g := start(t)
	for i := 1; i <= 103; i++ {
		body := fmt.Sprintf(`{"model":"chat/fake","messages":[{"role":"system","content":"prompt v%d"}]}`, i)
		if r := g.Do(t, "POST", "/presets/many/chat/completions", g.key, body); r.Status != http.StatusOK {
			t.Fatalf("version %d: %d %s", i, r.Status, r.Body)
		}
	}
	for i := range 105 {
		if r := g.Do(t, "POST", "/guardrails", g.Admin, map[string]any{"name": fmt.Sprintf("g%03d", i)}); r.Status != http.StatusCreated {
			t.Fatalf("guardrail %d: %d %s", i, r.Status, r.Body)
		}
	}
	b := newBrowser(t, g.Root)
	b.signIn(g.Admin)
	versions := func(body string) (first, last int) {
		rows := regexp.MustCompile(`<tr><td class="n">(\d+)</td>`).FindAllStringSubmatch(body, -1)
		if len(rows) == 0 {
			t.Fatalf("no versions:\n%s", body)
		}
		first, _ = strconv.Atoi(rows[0][1])
		last, _ = strconv.Atoi(rows[len(rows)-1][1])
		return first, last
	}
	p := b.do("GET", "/console/presets/many", nil)
	if first, last := versions(p.Body); first != 4 || last != 103 {
		t.Fatalf("the preset page shows versions %d to %d, want the newest 100 (4 to 103)", first, last)
	}
	for _, want := range []string{`name="a" inputmode="numeric" value="102"`, `name="b" inputmode="numeric" value="103"`,
		"4–103 of 103", `href="/console/presets/many?versions=0" rel="prev"`} {
		if !strings.Contains(p.Body, want) {
			t.Fatalf("the preset page lacks %q:\n%s", want, p.Body)
		}
	}
	p = b.do("GET", "/console/presets/many?versions=0", nil)
	if first, last := versions(p.Body); first != 1 || last != 100 || !strings.Contains(p.Body, `href="/console/presets/many?versions=100" rel="next"`) {
		t.Fatalf("the first page of versions shows %d to %d:\n%s", first, last, p.Body)
	}

	rows := func(body string) int { return strings.Count(body, `<tr><td><a href="/console/guardrails/`) }
	p = b.do("GET", "/console/guardrails", nil)
	if n := rows(p.Body); n != 100 || !strings.Contains(p.Body, `href="/console/guardrails?offset=100" rel="next"`) {
		t.Fatalf("the first page of guardrails: %d rows:\n%s", n, p.Body)
	}
	p = b.do("GET", "/console/guardrails?offset=100", nil)
	if n := rows(p.Body); n != 5 || !strings.Contains(p.Body, "101–105 of 105") || !strings.Contains(p.Body, `href="/console/guardrails?offset=0" rel="prev"`) {
		t.Fatalf("the last page of guardrails: %d rows:\n%s", n, p.Body)
	}
	for _, q := range []string{"/console/guardrails?offset=-1", "/console/guardrails?offset=x", "/console/presets/many?versions=1e3",
		"/console/presets?offset=99999999999"} {
		if p := b.do("GET", q, nil); p.Status != http.StatusBadRequest || !strings.Contains(p.Body, "must be an offset") {
			t.Fatalf("%s: %d %s", q, p.Status, p.Body)
		}
	}
}
