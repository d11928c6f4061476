package httpapi

import (
	"encoding/json"
	"net/http"
	"reflect"

	"github.com/gin-gonic/gin"

	"github.com/switchboard-ai/switchboard/domain/speech"
	"github.com/switchboard-ai/switchboard/ports"
)

// SpeechHandler serves POST /audio/speech.
type SpeechHandler struct{ speech ports.SpeechService }

func NewSpeechHandler(s ports.SpeechService) *SpeechHandler { return &SpeechHandler{speech: s} }

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
		return &json.UnmarshalTypeError{Value: valueKind(b), Type: reflect.TypeFor[voice]()}
	}
	*v = voice(obj.ID)
	return nil
}

func (voice) jsonType() string { return `a voice name, or an object {"id": "..."}` }

func (h *SpeechHandler) create(c *gin.Context) {
	var body speechReq
	if err := bindSpeech(c, &body); err != nil {
		writeError(c, err)
		return
	}
	req := speech.Request{Model: deref(body.Model), Input: deref(body.Input), Voice: deref((*string)(body.Voice)),
		Format: speech.Format(deref(body.ResponseFormat)), Speed: body.Speed, User: deref(body.User), SessionID: deref(body.SessionID)}
	if body.Provider != nil {
		req.Options = body.Provider.Options
	}
	sink := &audioSink{newFlushWriter(c)}
	id, err := h.speech.Synthesize(c.Request.Context(), principal(c), req, caller(c), sink)
	if err != nil {
		if id != "" && !sink.started {
			c.Header("X-Generation-Id", id)
		}
		writeError(c, err)
	}
}

// audioSink is a speech call's response.
type audioSink struct{ flushWriter }

func (s *audioSink) Start(contentType, generationID string) {
	s.header("Content-Type", contentType)
	s.header("X-Generation-Id", generationID)
	s.start(http.StatusOK)
}
