// Package console is the operator's web console: server-rendered HTML pages under /console/, signed in with a
// management key. Its templates and stylesheet are embedded in the binary; it makes no third-party request and
// runs no script. Every stored text is rendered through html/template, which escapes it as text.
package console

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/ports"
)

// Prefix is where the console is served.
const Prefix = "/console/"

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// SpoolDepth is what waits in the spool of generation records not yet stored (app.Recorder).
type SpoolDepth interface {
	Stats() ports.SpoolStats
}

// Deps are the use cases the console's pages read and change.
type Deps struct {
	Console     ports.ConsoleService
	Keys        ports.KeyService
	Generations ports.GenerationService
	Activity    ports.ActivityService
	List        ports.GenerationLister
	Workspaces  ports.WorkspaceService
	Presets     ports.PresetService
	Guardrails  ports.GuardrailService
	Videos      ports.VideoService
	Health      ports.EndpointHealth
	Spool       SpoolDepth
}

// Handler serves the console.
type Handler struct {
	Deps
	log   *slog.Logger
	now   func() time.Time
	mux   *http.ServeMux
	pages map[string]*template.Template
}

// cookieName holds the session token; csrfField is the form field that carries a session's CSRF token.
const (
	cookieName = "switchboard_console"
	csrfField  = "csrf"
	// maxForm bounds a console form's body: its fields are short.
	maxForm = 64 << 10
)

// securityHeaders are on every console response: nothing but the console's own stylesheet, images and media load
// (no script at all), forms post only to it, no site frames it, and no URL of it leaks to another site.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self'; media-src 'self'; " +
		"form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
	"X-Content-Type-Options": "nosniff",
	"Referrer-Policy":        "same-origin",
	"X-Frame-Options":        "DENY",
	"Cache-Control":          "no-store",
}

func New(d Deps, log *slog.Logger, now func() time.Time) *Handler {
	h := &Handler{Deps: d, log: log, now: now, mux: http.NewServeMux(), pages: parsePages()}
	static, err := fs.Sub(staticFiles, "static")
	if err != nil {
		panic(err) // the embedded directory exists
	}
	m := h.mux
	m.Handle("GET /console", http.RedirectHandler(Prefix, http.StatusMovedPermanently))
	// One file a request: the folder itself is not listed.
	m.Handle("GET /console/static/{file}", http.StripPrefix("/console/static/", http.FileServerFS(static)))
	m.HandleFunc("GET /console/{$}", h.authed(func(w http.ResponseWriter, r *http.Request, _ *session) {
		http.Redirect(w, r, "/console/overview", http.StatusSeeOther)
	}))
	m.HandleFunc("GET /console/login", h.loginPage)
	m.HandleFunc("POST /console/login", h.login)
	m.HandleFunc("POST /console/logout", h.authed(h.logout))
	m.HandleFunc("GET /console/overview", h.authed(h.overview))
	m.HandleFunc("GET /console/generations", h.authed(h.generations))
	m.HandleFunc("GET /console/generations/{id}", h.authed(h.generation))
	m.HandleFunc("GET /console/keys", h.authed(h.keys))
	m.HandleFunc("POST /console/keys", h.authed(h.createKey))
	m.HandleFunc("GET /console/keys/{hash}", h.authed(h.key))
	m.HandleFunc("POST /console/keys/{hash}", h.authed(h.updateKey))
	m.HandleFunc("GET /console/workspaces", h.authed(h.workspaces))
	m.HandleFunc("POST /console/workspaces", h.authed(h.createWorkspace))
	m.HandleFunc("GET /console/workspaces/{id}", h.authed(h.workspace))
	m.HandleFunc("POST /console/workspaces/{id}", h.authed(h.updateWorkspace))
	m.HandleFunc("GET /console/presets", h.authed(h.presets))
	m.HandleFunc("GET /console/presets/{slug}", h.authed(h.preset))
	m.HandleFunc("GET /console/guardrails", h.authed(h.guardrails))
	m.HandleFunc("GET /console/guardrails/{id}", h.authed(h.guardrail))
	m.HandleFunc("POST /console/guardrails/{id}", h.authed(h.updateGuardrail))
	m.HandleFunc("GET /console/videos", h.authed(h.videos))
	m.HandleFunc("GET /console/videos/{id}/content", h.authed(h.videoContent))
	m.HandleFunc("GET /console/health", h.authed(h.health))
	return h
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	for k, v := range securityHeaders {
		w.Header().Set(k, v)
	}
	h.mux.ServeHTTP(w, r)
}

// session is a signed-in request: the principal of its management key, and the CSRF token its forms carry.
type session struct {
	By   account.Principal
	CSRF string
}

// csrfToken is derived from the session token (an HMAC keyed by it): only a page of the session has it, and it
// needs no storage of its own.
func csrfToken(sessionToken string) string {
	m := hmac.New(sha256.New, []byte(sessionToken))
	m.Write([]byte("switchboard console csrf"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// authed runs next for a live session; a request without one goes to the sign-in page. A write must come from
// the console's own origin and carry the session's CSRF token.
func (h *Handler) authed(next func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		write := r.Method != http.MethodGet && r.Method != http.MethodHead
		if write && !sameOrigin(r, true) {
			h.fail(w, r, nil, errCrossOrigin)
			return
		}
		c, err := r.Cookie(cookieName)
		token := ""
		if err == nil {
			token = c.Value
		}
		by, err := h.Console.Resume(r.Context(), token)
		if errors.Is(err, account.ErrUnauthenticated) {
			if token != "" {
				clearCookie(w, r)
			}
			http.Redirect(w, r, "/console/login", http.StatusSeeOther)
			return
		}
		if err != nil {
			h.fail(w, r, nil, err)
			return
		}
		s := &session{By: by, CSRF: csrfToken(token)}
		if err := readInput(w, r); err != nil {
			h.fail(w, r, s, err)
			return
		}
		if write && subtle.ConstantTimeCompare([]byte(r.PostForm.Get(csrfField)), []byte(s.CSRF)) != 1 {
			h.fail(w, r, s, errCSRF)
			return
		}
		next(w, r, s)
	}
}

// readInput parses the request's form (a write's body, at most maxForm bytes) and query, and refuses text a
// database cannot store (domain.CheckText) in the path or any field, naming it: nothing past it has to care.
func readInput(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		return domain.Invalid("form", "is not a form this console sent")
	}
	if err := domain.CheckText("path", r.URL.Path); err != nil {
		return err
	}
	for field, values := range r.Form {
		if err := domain.CheckText("field", field); err != nil {
			return err
		}
		for _, v := range values {
			if err := domain.CheckText(field, v); err != nil {
				return err
			}
		}
	}
	return nil
}

var (
	errCrossOrigin = domain.E(domain.KindForbidden, "cross_origin",
		"this request came from another site: the console takes changes from its own pages only")
	errCSRF = domain.E(domain.KindForbidden, "csrf_token",
		"this form is missing its CSRF token or carries another session's: reload the page and try again")
)

// sameOrigin reports whether a write comes from a page of this server. A browser says where a request comes from
// in Sec-Fetch-Site, which decides when present. Without it (an older browser), Origin's host must be this
// server's; its scheme is not compared, so that a proxy which ends TLS in front of the gateway does not refuse
// every write. A request with neither header is not a browser's, and is left to the CSRF token. Origin "null" comes
// from a page that sends no referrer or from a sandboxed frame, not from the console's pages (Referrer-Policy:
// same-origin): a write that carries the CSRF token may take it (nullOK), as the token decides; a sign-in, which
// has no token yet, may not.
func sameOrigin(r *http.Request, nullOK bool) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" {
		return site == "same-origin"
	}
	o := r.Header.Get("Origin")
	if o == "" || o == "null" {
		return o == "" || nullOK
	}
	u, err := url.Parse(o)
	return err == nil && u.Host != "" && u.Host == r.Host
}

func (h *Handler) setCookie(w http.ResponseWriter, r *http.Request, token string, expires time.Time) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: token, Path: Prefix, Expires: expires,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
}

func clearCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Path: Prefix, MaxAge: -1, HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteStrictMode})
}

func (h *Handler) loginPage(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusOK, "login", nil, nil)
}

// login checks the origin (there is no session, so no CSRF token yet: the origin check keeps another site from
// signing a browser in to a key of its own, "null" included).
func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r, false) {
		h.fail(w, r, nil, errCrossOrigin)
		return
	}
	if err := readInput(w, r); err != nil {
		h.fail(w, r, nil, err)
		return
	}
	token, expires, err := h.Console.SignIn(r.Context(), r.PostForm.Get("key"))
	switch {
	case errors.Is(err, account.ErrUnauthenticated):
		h.render(w, r, http.StatusUnauthorized, "login", nil, map[string]any{"Error": "That key is not a live API key."})
		return
	case errors.Is(err, account.ErrManagementOnly):
		h.render(w, r, http.StatusForbidden, "login", nil,
			map[string]any{"Error": "The console takes a management key: this one is an inference key."})
		return
	case err != nil:
		h.fail(w, r, nil, err)
		return
	}
	h.setCookie(w, r, token, expires)
	http.Redirect(w, r, "/console/overview", http.StatusSeeOther)
}

func (h *Handler) logout(w http.ResponseWriter, r *http.Request, _ *session) {
	c, err := r.Cookie(cookieName)
	if err == nil {
		if err := h.Console.SignOut(r.Context(), c.Value); err != nil {
			h.fail(w, r, nil, err)
			return
		}
	}
	clearCookie(w, r)
	http.Redirect(w, r, "/console/login", http.StatusSeeOther)
}

// fail renders an error page with the error's status; an unexpected error is logged and shown without detail.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, s *session, err error) {
	status := domain.StatusOf(err)
	msg := "Something went wrong on the gateway's side; the log has the details."
	var de *domain.Error
	if errors.As(err, &de) && status < 500 {
		msg = de.Msg
	} else {
		h.log.ErrorContext(r.Context(), "console", "path", r.URL.Path, "err", err)
	}
	h.render(w, r, status, "error", s, map[string]any{"Error": msg, "Status": status})
}
