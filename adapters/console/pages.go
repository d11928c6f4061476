package console

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/ports"
)

// overviewSpans are the periods the overview shows, in days; the first is the default.
var overviewSpans = []int{30, 7, 90}

// overview is usage by day, model, provider and key, all read from the activity aggregates (no scan of records).
func (h *Handler) overview(w http.ResponseWriter, r *http.Request, s *session) {
	span := overviewSpans[0]
	if n, err := strconv.Atoi(r.URL.Query().Get("days")); err == nil && slices.Contains(overviewSpans, n) {
		span = n
	}
	today := generation.Day(h.now())
	days := make([]time.Time, span)
	for i := range days {
		days[i] = today.AddDate(0, 0, i-span+1)
	}
	// The four reads of the aggregates, and the keys' names, at once: the page waits for the slowest, not the sum.
	groups := []ports.ActivityGroup{ports.ByDay, ports.ByModel, ports.ByProvider, ports.ByKey}
	rows := make([][]generation.Activity, len(groups))
	var names map[string]string
	eg, ctx := errgroup.WithContext(r.Context())
	for i, g := range groups {
		eg.Go(func() (err error) {
			f := ports.ActivityFilter{From: days[0], To: today.AddDate(0, 0, 1), GroupBy: g}
			rows[i], err = h.Activity.Activity(ctx, s.By, ports.ActivityQuery{ActivityFilter: f})
			return err
		})
	}
	eg.Go(func() (err error) {
		names, err = h.keyNames(ctx)
		return err
	})
	if err := eg.Wait(); err != nil {
		h.fail(w, r, s, err)
		return
	}
	usage := make(map[time.Time]generation.Usage, len(rows[0]))
	var total generation.Usage
	for _, a := range rows[0] {
		usage[a.Day.UTC()] = a.Usage
		total = total.Add(a.Usage)
	}
	charts := make([]chart, len(measures))
	for i, m := range measures {
		charts[i] = dailyChart(m, days, usage)
	}
	tables := []breakdown{
		newBreakdown("By model", rows[1], func(k generation.ActivityKey) string { return k.Model }),
		newBreakdown("By provider", rows[2], func(k generation.ActivityKey) string { return or(k.ProviderName, "(none reached)") }),
		newBreakdown("By key", rows[3], func(k generation.ActivityKey) string { return or(names[k.KeyHash], short(k.KeyHash)) }),
	}
	h.render(w, r, http.StatusOK, "overview", s, map[string]any{"Span": span, "Spans": overviewSpans, "Total": total,
		"Charts": charts, "Tables": tables})
}

func or(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

// keyNames names every key by its hash, for the pages that show a record's key.
func (h *Handler) keyNames(ctx context.Context) (map[string]string, error) {
	keys, err := h.Keys.ListKeys(ctx, ports.KeyFilter{IncludeDisabled: true})
	if err != nil {
		return nil, err
	}
	names := make(map[string]string, len(keys))
	for _, k := range keys {
		names[k.Hash] = k.Name
	}
	return names, nil
}

// listFilter reads the generations page's filters from its query; a bad one is a 400 naming it.
func listFilter(q url.Values) (ports.GenerationFilter, error) {
	f := ports.GenerationFilter{KeyHash: q.Get("key"), Model: q.Get("model"), ProviderName: q.Get("provider"),
		SessionID: q.Get("session"), UserID: q.Get("user"), Limit: generation.DefaultPage}
	for _, field := range []string{"key", "model", "provider", "session", "user"} {
		if err := domain.CheckLength(field, q.Get(field), 256); err != nil {
			return f, err
		}
	}
	for _, d := range []struct {
		field string
		dst   *time.Time
		add   int
	}{{"from", &f.From, 0}, {"to", &f.To, 1}} { // "to" is the last day shown: the list ends at its end
		if v := q.Get(d.field); v != "" {
			t, err := time.Parse("2006-01-02", v)
			if err != nil {
				return f, domain.Invalid(d.field, "must be a date, YYYY-MM-DD")
			}
			*d.dst = t.AddDate(0, 0, d.add)
		}
	}
	if v := q.Get("status"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 100 || n > 599 {
			return f, domain.Invalid("status", "must be an HTTP status, 100 to 599")
		}
		f.Status = n
	}
	if v := q.Get("after"); v != "" {
		c, err := generation.ParseCursor(v)
		if err != nil {
			return f, err
		}
		f.After = &c
	}
	return f, nil
}

// generations is the filtered list, newest first, a page at a time (the next page starts after the last row).
func (h *Handler) generations(w http.ResponseWriter, r *http.Request, s *session) {
	q := r.URL.Query()
	f, err := listFilter(q)
	if err != nil {
		h.fail(w, r, s, err)
		return
	}
	page, err := h.List.ListGenerations(r.Context(), s.By, f)
	if err != nil {
		h.fail(w, r, s, err)
		return
	}
	names, err := h.keyNames(r.Context())
	if err != nil {
		h.fail(w, r, s, err)
		return
	}
	h.render(w, r, http.StatusOK, "generations", s, map[string]any{"Records": page.Records, "Names": names,
		"Next": nextPage("/console/generations", q, page.Next), "Q": q, "First": q.Get("after") == ""})
}

// nextPage is the link to the page of a keyset list that starts after next (none after the last page): path with
// the query q, its filters kept and its cursor moved.
func nextPage(path string, q url.Values, next *generation.Cursor) string {
	if next == nil {
		return ""
	}
	nq := url.Values{}
	for k, v := range q {
		if k != "after" {
			nq[k] = v
		}
	}
	nq.Set("after", next.String())
	return path + "?" + nq.Encode()
}

// generation is one record's detail with its stored content, every text shown as text.
func (h *Handler) generation(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	rec, err := h.Generations.Generation(r.Context(), s.By, id)
	if err != nil {
		h.fail(w, r, s, err)
		return
	}
	content, err := h.Generations.GenerationContent(r.Context(), s.By, id)
	var stored *generation.Content
	switch {
	case err == nil:
		stored = &content
	case !errors.Is(err, generation.ErrNotFound):
		h.fail(w, r, s, err)
		return
	}
	key, err := h.Keys.GetKey(r.Context(), rec.KeyHash)
	if err != nil && !errors.Is(err, account.ErrKeyNotFound) { // a deleted key's records stay
		h.fail(w, r, s, err)
		return
	}
	h.render(w, r, http.StatusOK, "generation", s, map[string]any{"R": rec, "C": stored, "KeyName": key.Name})
}

// keys lists every key with its spend, and the form that creates one.
func (h *Handler) keys(w http.ResponseWriter, r *http.Request, s *session) {
	h.renderKeys(w, r, s, http.StatusOK, nil)
}

// renderKeys renders the keys page with extra data (a new key's secret, or a form's error).
func (h *Handler) renderKeys(w http.ResponseWriter, r *http.Request, s *session, status int, extra map[string]any) {
	keys, err := h.Keys.ListKeys(r.Context(), ports.KeyFilter{IncludeDisabled: true})
	if err != nil {
		h.fail(w, r, s, err)
		return
	}
	data := map[string]any{"Keys": keys, "Resets": resets}
	for k, v := range extra {
		data[k] = v
	}
	h.render(w, r, status, "keys", s, data)
}

// resets are the windows a key's spending limit may reset in, as the forms offer them.
var resets = []domain.Interval{domain.IntervalNone, domain.IntervalDaily, domain.IntervalWeekly, domain.IntervalMonthly}

// createKey issues an inference key and shows its secret on this one response only (never stored, no redirect
// that would keep it in history: the page is not cached).
func (h *Handler) createKey(w http.ResponseWriter, r *http.Request, s *session) {
	f := r.PostForm
	spec := account.KeySpec{Name: f.Get("name")}
	limit, err := usdField(f, "limit")
	if err == nil {
		spec.Limit = limit
		spec.LimitReset, err = resetField(f)
	}
	var view ports.KeyView
	var secret string
	if err == nil {
		view, secret, err = h.Keys.CreateKey(r.Context(), s.By, spec)
	}
	if err != nil {
		h.formError(w, r, s, err, func(status int, msg string) {
			h.renderKeys(w, r, s, status, map[string]any{"Error": msg})
		})
		return
	}
	h.renderKeys(w, r, s, http.StatusCreated, map[string]any{"Created": view, "Secret": secret})
}

// formError shows a refused form's error on its page (with re-render) when it is the caller's, else fails.
func (h *Handler) formError(w http.ResponseWriter, r *http.Request, s *session, err error, rerender func(int, string)) {
	var de *domain.Error
	if status := domain.StatusOf(err); status < 500 && errors.As(err, &de) {
		rerender(status, de.Msg)
		return
	}
	h.fail(w, r, s, err)
}

// usdField reads an optional dollar amount.
func usdField(f url.Values, field string) (*domain.Micros, error) {
	v := strings.TrimSpace(f.Get(field))
	if v == "" {
		return nil, nil
	}
	m, err := domain.ParseUSD(v)
	if err != nil {
		return nil, domain.Invalid(field, "must be an amount in dollars, such as 12.50")
	}
	return &m, nil
}

// resetField reads the window a spending limit resets in: empty for never.
func resetField(f url.Values) (domain.Interval, error) {
	v := f.Get("limit_reset")
	if v == "" {
		return domain.IntervalNone, nil
	}
	i, err := domain.ParseInterval(v)
	if err != nil {
		return "", domain.Invalid("limit_reset", err.Error())
	}
	return i, nil
}

// key shows one key, with the forms that change its limits and disable or enable it.
func (h *Handler) key(w http.ResponseWriter, r *http.Request, s *session) {
	h.renderKey(w, r, s, http.StatusOK, "")
}

func (h *Handler) renderKey(w http.ResponseWriter, r *http.Request, s *session, status int, msg string) {
	k, err := h.Keys.GetKey(r.Context(), r.PathValue("hash"))
	if err != nil {
		h.fail(w, r, s, err)
		return
	}
	h.render(w, r, status, "key", s, map[string]any{"K": k, "Resets": resets, "Error": msg})
}

// updateKey applies one of the key page's forms: action "disable", "enable", or "limits".
func (h *Handler) updateKey(w http.ResponseWriter, r *http.Request, s *session) {
	f := r.PostForm
	var change account.KeyChange
	var err error
	switch f.Get("action") {
	case "disable", "enable":
		disabled := f.Get("action") == "disable"
		change.Disabled = &disabled
	case "limits":
		change, err = limitsChange(f)
	default:
		err = domain.Invalid("action", "must be disable, enable or limits")
	}
	if err == nil {
		_, err = h.Keys.UpdateKey(r.Context(), r.PathValue("hash"), change)
	}
	if err != nil {
		h.formError(w, r, s, err, func(status int, msg string) { h.renderKey(w, r, s, status, msg) })
		return
	}
	back := "/console/keys/" + url.PathEscape(r.PathValue("hash"))
	if f.Get("back") == "list" {
		back = "/console/keys"
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// limitsChange reads the limits form: every field is set (an empty one clears the limit, or is 0: the default).
func limitsChange(f url.Values) (account.KeyChange, error) {
	var c account.KeyChange
	limit, err := usdField(f, "limit")
	if err != nil {
		return c, err
	}
	c.Limit = domain.Patch[domain.Micros]{Set: true, Value: limit}
	reset, err := resetField(f)
	if err != nil {
		return c, err
	}
	c.LimitReset = domain.Patch[domain.Interval]{Set: true, Value: &reset}
	rpm, err := intField(f, "requests_per_minute")
	if err != nil {
		return c, err
	}
	n := int(rpm)
	c.RequestsPerMinute = &n
	if c.TokensPerMinute, err = ptr(intField(f, "tokens_per_minute")); err != nil {
		return c, err
	}
	c.TokensPerDay, err = ptr(intField(f, "tokens_per_day"))
	return c, err
}

func ptr[T any](v T, err error) (*T, error) { return &v, err }

// intField reads a whole number, 0 when empty; the use case checks its range.
func intField(f url.Values, field string) (int64, error) {
	v := strings.TrimSpace(f.Get(field))
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, domain.Invalid(field, "must be a whole number")
	}
	return n, nil
}

// health is the spool's depth and what this replica measured of each upstream endpoint.
func (h *Handler) health(w http.ResponseWriter, r *http.Request, s *session) {
	h.render(w, r, http.StatusOK, "health", s, map[string]any{"Spool": h.Spool.Stats(), "Endpoints": h.Health.Endpoints()})
}
