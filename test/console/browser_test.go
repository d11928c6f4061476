package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/switchboard-ai/switchboard/test/harness"
	"github.com/switchboard-ai/switchboard/test/short"
)

// chromiumPath is Debian's Chromium, which `make test-deps` installs.
const chromiumPath = "/usr/bin/chromium"

// screenshotsEnv names a directory the browser test writes a screenshot of each page into (docs/console when the
// docs are refreshed: `SWITCHBOARD_CONSOLE_SCREENSHOTS=$PWD/docs/console go test -run TestConsoleBrowser ./test/console`).
const screenshotsEnv = "SWITCHBOARD_CONSOLE_SCREENSHOTS"

// TestConsoleBrowser drives the console in headless Chromium: signing in, the calls made a moment before in the
// overview and in the generations list, a hostile prompt shown as text (no script runs, no image loads), a key
// created and shown once, then disabled (and refused by the API); a form without its CSRF token refused, and a
// form posted from another origin, with the session's cookie and even its token, refused.
func TestConsoleBrowser(t *testing.T) {
	t.Parallel()
	short.Skip(t, "Chromium and PostgreSQL")
	if _, err := exec.LookPath(chromiumPath); err != nil {
		t.Fatalf("the console's browser test needs Debian's Chromium at %s: run `make test-deps` or `apt-get install -y chromium` (%v)",
			chromiumPath, err)
	}
	clock := harness.NewClock(time.Now().UTC().Truncate(time.Microsecond).AddDate(0, 0, -6))
	g := start(t, harness.WithClock(clock))
	ids := seed(t, g, clock)
	hostile := ids[len(ids)-1]

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromiumPath), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 900), chromedp.DisableGPU)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	defer cancelTimeout()
	if err := chromedp.Do(ctx); err != nil { // the browser starts with ctx, not with a step's shorter one
		t.Fatalf("start %s: %v", chromiumPath, err)
	}
	shots := os.Getenv(screenshotsEnv)
	shot := func(name string) chromedp.Action[chromedp.Void] {
		return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			if shots == "" {
				return chromedp.Void{}, nil
			}
			png, err := chromedp.FullScreenshot(100)(ctx, tg)
			if err != nil {
				return chromedp.Void{}, err
			}
			return chromedp.Void{}, os.WriteFile(filepath.Join(shots, name+".png"), png, 0o644)
		}
	}
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := chromedp.Do(sctx, steps...); err != nil {
			// Where the browser was and what it showed say more than the timeout.
			loc, _ := chromedp.Run(ctx, chromedp.Location())
			body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
			t.Fatalf("%s: %v\nat %s:\n%s", what, err, loc, body)
		}
	}
	text := func(sel chromedp.CSS) string { return strings.TrimSpace(get(t, ctx, string(sel), chromedp.Text(sel))) }
	count := func(css string) int {
		return get(t, ctx, "count "+css, chromedp.Evaluate[int](`document.querySelectorAll(`+strconv.Quote(css)+`).length`))
	}

	// Sign in; the overview counts the calls made a moment before.
	do("sign in", chromedp.Navigate(g.Root+"/console/"), chromedp.WaitVisible(chromedp.ID("key")), shot("login"),
		chromedp.SendKeys(chromedp.ID("key"), g.Admin), chromedp.Click(chromedp.ID("signin")),
		chromedp.WaitVisible(chromedp.ID("total-calls")), shot("overview"))
	if got := text("#total-calls"); got != strconv.Itoa(len(ids)) {
		t.Fatalf("the overview counts %s calls, want %d", got, len(ids))
	}

	// The list, newest first: the hostile call heads it; its page shows the prompt as text.
	do("generations", chromedp.Navigate(g.Root+"/console/generations"), chromedp.WaitVisible(chromedp.ID("generations")),
		shot("generations"))
	first := chromedp.CSS("#generations tbody tr:first-child a")
	if href := get(t, ctx, "first row", chromedp.AttributeValue(first, "href")).Value; href != "/console/generations/"+hostile {
		t.Fatalf("the list starts with %q, want the last call %s", href, hostile)
	}
	do("generation", chromedp.Click(first), chromedp.WaitVisible(chromedp.CSS(".message pre")), shot("generation"))
	prompt, title := get(t, ctx, "prompt", chromedp.Text(chromedp.CSS(".message pre"))), get(t, ctx, "title", chromedp.Title())
	if markup := count("main script, main img"); prompt != hostilePrompt || title == "pwned" || markup != 0 {
		t.Fatalf("prompt %q, title %q, %d elements made from it", prompt, title, markup)
	}

	// A video job, for the videos page (before the guardrail below, which allows chat only, is assigned to the key).
	if r := g.Do(t, "POST", "/videos", g.key, map[string]any{"model": "video/fake", "prompt": "a switchboard, 1920s"}); r.Status != http.StatusAccepted {
		t.Fatalf("video: %d %s", r.Status, r.Body)
	}

	// A key, created and shown once, works until it is disabled.
	do("create key", chromedp.Navigate(g.Root+"/console/keys"), chromedp.WaitVisible(chromedp.ID("key-name")),
		chromedp.SendKeys(chromedp.ID("key-name"), "browser key"), chromedp.Click(chromedp.ID("create-key")),
		chromedp.WaitVisible(chromedp.ID("secret")), shot("key-created"))
	secret := text("#secret")
	if !strings.HasPrefix(secret, "sk-sb-v1-") || g.Do(t, "GET", "/key", secret, nil).Status != http.StatusOK {
		t.Fatalf("the new key %q does not work", secret)
	}
	do("keys again", chromedp.Navigate(g.Root+"/console/keys"), chromedp.WaitVisible(chromedp.ID("keys")), shot("keys"))
	if count("#secret") != 0 {
		t.Fatal("the key's secret is shown again")
	}
	row := `//tr[td/a[text()="browser key"]]`
	do("disable key", chromedp.Click(chromedp.Search(row+`//button[@value="disable"]`)),
		chromedp.WaitVisible(chromedp.Search(row+`//button[@value="enable"]`)))
	state := get(t, ctx, "state", chromedp.Text(chromedp.Search(row+`/td[@class="state"]`)))
	if state != "disabled" || g.Do(t, "GET", "/key", secret, nil).Status != http.StatusUnauthorized {
		t.Fatalf("the disabled key is %q, and the API still takes it", state)
	}
	do("key page", chromedp.Click(chromedp.Search(row+`/td/a`)), chromedp.WaitVisible(chromedp.CSS("dl.facts")), shot("key"))
	do("workspace", chromedp.Navigate(g.Root+"/console/workspaces"), chromedp.WaitVisible(chromedp.ID("workspace-name")),
		chromedp.SendKeys(chromedp.ID("workspace-name"), "Research"), chromedp.Click(chromedp.ID("create-workspace")),
		chromedp.WaitVisible(chromedp.Search(`//td/a[text()="Research"]`)), shot("workspaces"))
	// Its page sets a weekly budget, which its list then shows.
	do("workspace budget", chromedp.Click(chromedp.Search(`//td/a[text()="Research"]`)), chromedp.WaitVisible(chromedp.ID("budget-limit")),
		chromedp.SetValue(chromedp.ID("budget-interval"), "weekly"), chromedp.SendKeys(chromedp.ID("budget-limit"), "12.50"),
		chromedp.Click(chromedp.ID("set-budget")), chromedp.WaitVisible(chromedp.Search(`//table[@id="budgets"]//td[text()="weekly"]`)),
		shot("workspace"))
	if got := text(`#budgets tbody tr td.n`); got != "$12.5" {
		t.Fatalf("the weekly budget is listed as %q, want $12.5", got)
	}

	// A preset's two versions and their difference; a guardrail assigned to a key from its page.
	do("preset", chromedp.Navigate(g.Root+"/console/presets"), chromedp.WaitVisible(chromedp.ID("presets")), shot("presets"),
		chromedp.Click(chromedp.CSS("#presets tbody a")), chromedp.WaitVisible(chromedp.ID("diff")), shot("preset"))
	if diff := text("#diff"); !strings.Contains(diff, "- Be terse.") || !strings.Contains(diff, "+ Be thorough.") {
		t.Fatalf("the difference of two versions: %q", diff)
	}
	do("guardrail", chromedp.Navigate(g.Root+"/console/guardrails"), chromedp.WaitVisible(chromedp.ID("guardrails")),
		shot("guardrails"), chromedp.Click(chromedp.CSS("#guardrails tbody a")), chromedp.WaitVisible(chromedp.CSS("select[name=key]")),
		chromedp.SetValue(chromedp.CSS("select[name=key]"), g.keyHash), chromedp.Click(chromedp.Search(`//button[@value="assign_keys"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#key-assignments input[value="`+g.keyHash+`"]`)), shot("guardrail"))
	do("videos", chromedp.Navigate(g.Root+"/console/videos"), chromedp.WaitVisible(chromedp.CSS("#videos td.status")), shot("videos"))
	do("health", chromedp.Navigate(g.Root+"/console/health"), chromedp.WaitVisible(chromedp.ID("endpoints")), shot("health"))

	// The create form without its CSRF token is refused.
	do("no csrf", chromedp.Navigate(g.Root+"/console/keys"), chromedp.WaitVisible(chromedp.ID("key-name")))
	get(t, ctx, "drop the token", chromedp.Evaluate[bool](`document.querySelector("form.create input[name=csrf]").remove(), true`))
	do("post without token", chromedp.SendKeys(chromedp.ID("key-name"), "no token"), chromedp.Click(chromedp.ID("create-key")),
		chromedp.WaitVisible(chromedp.ID("error")))
	if got := text("#error"); !strings.Contains(got, "CSRF token") {
		t.Fatalf("a form without its token: %q", got)
	}

	// Another origin's page posts a form to the console: the browser sends the session's cookie (127.0.0.1 on
	// another port is the same site) and the form even carries the session's token, yet the console refuses it.
	csrf := get(t, ctx, "token", chromedp.AttributeValue(chromedp.CSS("form.logout input[name=csrf]"), "value")).Value
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><form method="post" action="%s/console/keys"><input name="csrf" value="%s">`+
			`<input name="name" value="planted"><button id="go">go</button></form>`, g.Root, csrf)
	}))
	defer evil.Close()
	do("cross origin", chromedp.Navigate(evil.URL), chromedp.Click(chromedp.ID("go")), chromedp.WaitVisible(chromedp.ID("error")))
	if got := text("#error"); !strings.Contains(got, "came from another site") {
		t.Fatalf("a form from another origin: %q", got)
	}
	if r := g.Do(t, "GET", "/keys", g.Admin, nil); strings.Contains(string(r.Body), "planted") || strings.Contains(string(r.Body), "no token") {
		t.Fatalf("a refused form created a key: %s", r.Body)
	}
}

// get runs an action that reads a value from the page.
func get[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// seed makes calls over the last days (the gateway's clock moves a day at a time), the last with a hostile prompt,
// and returns their generation ids once every record is stored.
func seed(t *testing.T, g *gateway, clock *harness.Clock) []string {
	t.Helper()
	prompts := []string{"What is a switchboard?", "Summarise the meeting notes.", "Translate 'hello' into French."}
	var ids []string
	for day := range 7 {
		for i := range day%3 + 1 {
			ids = append(ids, g.send(t, prompts[(day+i)%len(prompts)]))
			clock.Advance(time.Minute) // calls in order: the list is by time
		}
		if day < 6 {
			clock.Advance(24*time.Hour - time.Hour)
		}
	}
	ids = append(ids, g.send(t, hostilePrompt))
	for _, system := range []string{"Be terse.", "Be thorough."} { // a preset of two versions
		if r := g.Do(t, "POST", "/presets/support/chat/completions", g.key, map[string]any{"model": "chat/fake", "temperature": 0.2,
			"messages": []any{map[string]any{"role": "system", "content": system}}}); r.Status != http.StatusOK {
			t.Fatalf("preset: %d %s", r.Status, r.Body)
		}
	}
	if r := g.Do(t, "POST", "/guardrails", g.Admin, map[string]any{"name": "Support budget", "limit_usd": 25,
		"reset_interval": "monthly", "allowed_models": []string{"chat/fake"}}); r.Status != http.StatusCreated {
		t.Fatalf("guardrail: %d %s", r.Status, r.Body)
	}
	for _, id := range ids {
		g.stored(t, id)
	}
	return ids
}
