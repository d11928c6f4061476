package httpapi

import (
	"encoding/json"
	"net/http"
	"reflect"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/switchboard-ai/switchboard/domain/speech"
	"github.com/switchboard-ai/switchboard/ports"
)

// SpeechHandler serves POST /audio/speech.
type SpeechHandler struct{ speech ports.Speech }

func NewSpeechHandler(s ports.Speech) *SpeechHandler { return &SpeechHandler{speech: s} }

type speechReq struct {
	Model          *string  `json:"model"`
	Input          *string  `json:"input"`
	Voice          *voice   `json:"voice"`
	ResponseFormat *string  `json:"response_format"`
	Speed          *float64 `json:"speed"`
	Provider       *struct {
		Options map[string]any `json:"options"`
	} `json:"provider"`
	User      *string `json:"user"`
	SessionID *string `json:"session_id"`
}

// voice is a voice name, or OpenAI's custom voice object {"id": "voice_..."}, which comes in as its id.
type voice string

func (v *voice) UnmarshalJSON(b []byte) error {
	var name string
	if err := json.Unmarshal(b, &name); err == nil {
		*v = voice(name)
		return nil
	}
	var obj struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &obj); err != nil || obj.ID == "" {
		return &json.UnmarshalTypeError{Value: string(b), Type: reflect.TypeFor[voice]()}
	}
	*v = voice(obj.ID)
	return nil
}

func (voice) jsonType() string { return `a voice name, or an object {"id": "..."}` }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// callInfo is what the request's headers say for the generation record.
func callInfo(c *gin.Context) ports.CallInfo {
	referer := c.GetHeader("HTTP-Referer")
	if referer == "" {
		referer = c.GetHeader("Referer")
	}
	origin := c.GetHeader("Origin")
	if origin == "" {
		origin = referer
	}
	return ports.CallInfo{RequestID: RequestID(c.Request.Context()), Origin: origin, Referer: referer,
		UserAgent: c.GetHeader("User-Agent"), SessionID: c.GetHeader("X-Session-Id")}
}

func (h *SpeechHandler) create(c *gin.Context) {
	var body speechReq
	if err := bindJSON(c, &body); err != nil {
		writeError(c, err)
		return
	}
	req := speech.Request{Model: deref(body.Model), Input: deref(body.Input), Voice: deref((*string)(body.Voice)),
		Format: speech.Format(deref(body.ResponseFormat)), Speed: body.Speed, User: deref(body.User), SessionID: deref(body.SessionID)}
	if body.Provider != nil {
		req.Options = body.Provider.Options
	}
	sink := &audioSink{newFlushWriter(c)}
	id, err := h.speech.Synthesize(c.Request.Context(), principal(c), req, callInfo(c), sink)
	if err != nil {
		if id != "" && !sink.started {
			c.Header("X-Generation-Id", id)
		}
		writeError(c, err)
	}
}

// streamIdle bounds how long one chunk may take to reach a slow caller; there is no total write timeout.
const streamIdle = 60 * time.Second

// flushWriter writes a stream to the response as it arrives, flushing each chunk. Its write deadline is an idle
// one: pushed streamIdle ahead whenever a quarter of it has passed, rather than on every chunk.
type flushWriter struct {
	c        *gin.Context
	rc       *http.ResponseController
	started  bool
	deadline time.Time
}

func newFlushWriter(c *gin.Context) flushWriter {
	return flushWriter{c: c, rc: http.NewResponseController(c.Writer)}
}

func (s *flushWriter) start(status int) {
	s.c.Writer.Header().Set("Cache-Control", "no-store")
	s.c.Writer.WriteHeader(status)
	s.started = true
}

func (s *flushWriter) Write(p []byte) error {
	if now := time.Now(); s.deadline.Sub(now) < 3*streamIdle/4 {
		s.deadline = now.Add(streamIdle)
		_ = s.rc.SetWriteDeadline(s.deadline)
	}
	if _, err := s.c.Writer.Write(p); err != nil {
		return err
	}
	return s.rc.Flush()
}

// audioSink is a speech call's response.
type audioSink struct{ flushWriter }

func (s *audioSink) Start(contentType, generationID string) {
	h := s.c.Writer.Header()
	h.Set("Content-Type", contentType)
	h.Set("X-Generation-Id", generationID)
	s.start(http.StatusOK)
}

// CreditsHandler serves GET /credits.
type CreditsHandler struct{ credits ports.Credits }

func NewCreditsHandler(c ports.Credits) *CreditsHandler { return &CreditsHandler{credits: c} }

func (h *CreditsHandler) get(c *gin.Context) {
	total, used, err := h.credits.Credits(c.Request.Context())
	if err != nil {
		writeError(c, err)
		return
	}
	data(c, http.StatusOK, gin.H{"total_credits": usd(total), "total_usage": usd(used)})
}
