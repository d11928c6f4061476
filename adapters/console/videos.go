package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/ports"
)

// videos lists the video jobs, newest first, a page at a time (the next page starts after the last row).
func (h *Handler) videos(w http.ResponseWriter, r *http.Request, s *session) {
	f := ports.VideoFilter{Limit: generation.DefaultPage}
	if v := r.URL.Query().Get("after"); v != "" {
		c, err := generation.ParseCursor(v)
		if err != nil {
			h.fail(w, r, s, err)
			return
		}
		f.After = &c
	}
	page, err := h.Videos.List(r.Context(), s.By, f)
	if err != nil {
		h.fail(w, r, s, err)
		return
	}
	names, err := h.keyNames(r.Context())
	if err != nil {
		h.fail(w, r, s, err)
		return
	}
	h.render(w, r, http.StatusOK, "videos", s, map[string]any{"Jobs": page.Jobs, "Names": names,
		"Next":  nextPage("/console/videos", url.Values{}, page.Next),
		"First": f.After == nil})
}

// videoContent streams a completed job's output (?index=, 0 by default) to the signed-in browser, as the API's
// content route does to a key.
func (h *Handler) videoContent(w http.ResponseWriter, r *http.Request, s *session) {
	index := 0
	if v := r.URL.Query().Get("index"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			h.fail(w, r, s, domain.Invalid("index", "must be an integer of at least 0"))
			return
		}
		index = n
	}
	sink := &videoSink{w: w, rc: http.NewResponseController(w)}
	if err := h.Videos.Content(r.Context(), s.By, r.PathValue("id"), index, "", sink); err != nil && !sink.started {
		h.fail(w, r, s, err)
	} else if err != nil {
		h.log.WarnContext(r.Context(), "console: video content cut short", "id", r.PathValue("id"), "err", err)
	}
}

// videoSink writes a download to the browser. Only a video's own type is served inline: anything else a provider
// answers with (text/html, say) is sent as a download of bytes, never rendered as a page of the console's origin.
type videoSink struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
}

func (s *videoSink) Start(c ports.VideoContent) {
	h := s.w.Header()
	if strings.HasPrefix(c.ContentType, "video/") {
		h.Set("Content-Type", c.ContentType)
	} else {
		h.Set("Content-Type", "application/octet-stream")
		h.Set("Content-Disposition", "attachment")
	}
	if c.ContentLength >= 0 { // the whole content: the console asks for no range
		h.Set("Content-Length", strconv.FormatInt(c.ContentLength, 10))
	}
	s.w.WriteHeader(http.StatusOK)
	s.started = true
}

func (s *videoSink) Write(p []byte) error {
	_, err := s.w.Write(p)
	return err
}

func (s *videoSink) Flush() error { return s.rc.Flush() }
