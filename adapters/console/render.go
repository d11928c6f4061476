package console

import (
	"bytes"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
)

// pageNames are the templates of templates/<name>.html, each rendered inside templates/layout.html.
var pageNames = []string{"login", "error", "overview", "generations", "generation", "keys", "key", "workspaces", "workspace", "presets", "preset",
	"guardrails", "guardrail", "videos", "health"}

var funcs = template.FuncMap{
	"usd":   func(m domain.Micros) string { return "$" + m.Decimal() },
	"when":  func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") },
	"ms":    func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) + " ms" },
	"short": short,
	"pct":   func(f float64) string { return strconv.FormatFloat(f*100, 'f', 1, 64) + "%" },
	"secs":  func(f float64) string { return strconv.FormatFloat(f, 'f', 3, 64) + " s" },
	"inc":   func(i int) int { return i + 1 },
	"join":  strings.Join,
}

// short is the start of a long identifier (a key's hash), enough to tell keys apart on a page.
func short(s string) string {
	if len(s) > 12 {
		return s[:12] + "…"
	}
	return s
}

func parsePages() map[string]*template.Template {
	pages := make(map[string]*template.Template, len(pageNames))
	for _, name := range pageNames {
		pages[name] = template.Must(template.New("layout.html").Funcs(funcs).
			ParseFS(templateFiles, "templates/layout.html", "templates/"+name+".html"))
	}
	return pages
}

// view is what every page's template gets: the session (nil when signed out), the page's name for the navigation,
// and the page's own data.
type view struct {
	Session *session
	Page    string
	Data    any
}

// render writes a page whole, or an error page when the template fails (nothing is sent half-written).
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, page string, s *session, data any) {
	var buf bytes.Buffer
	if err := h.pages[page].Execute(&buf, view{Session: s, Page: page, Data: data}); err != nil {
		h.log.ErrorContext(r.Context(), "console: render", "page", page, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
