package fakes

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// OpenAI errors, byte for byte in OpenAI's shape.
const (
	OpenAIRateLimited = `{"error":{"message":"Rate limit reached for requests","type":"requests","param":null,"code":"rate_limit_exceeded"}}`
	OpenAIQuota       = `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`
	OpenAIServerError = `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`
	OpenAIOverloaded  = `{"error":{"message":"The engine is currently overloaded, please try again later","type":"server_error","param":null,"code":null}}`
	OpenAIBadInput    = `{"error":{"message":"Input should be at most 4096 characters","type":"invalid_request_error","param":"input","code":null}}`
	openAIBadKey      = `{"error":{"message":"Incorrect API key provided: %s. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`
)

// OpenAI fakes api.openai.com/v1: POST /v1/audio/speech, POST /v1/chat/completions (openai_chat.go), POST
// /v1/embeddings (embed.go) and the videos API (openai_video.go).
type OpenAI struct {
	*Fake
	Key string
	// Keys are other keys it takes, each another account of the same customer (set before the first call).
	Keys []string
	// FloatsOnly answers embeddings as floats whatever encoding_format asks (an OpenAI-compatible host without
	// base64).
	FloatsOnly bool
	// EmbedPromptTokens, when set, is the usage its embeddings answers report, in place of its count.
	EmbedPromptTokens *int64
	jobs              videoJobs
}

// NewOpenAI serves OpenAI's API for the key; its BaseURL is what providers[].base_url takes.
func NewOpenAI(t testing.TB, key string) *OpenAI {
	o := &OpenAI{Key: key}
	o.Fake = newFake(t, o.serve)
	return o
}

func (o *OpenAI) BaseURL() string { return o.URL + "/v1" }

// SetVideo scripts the video jobs created from now on.
func (o *OpenAI) SetVideo(s VideoScript) { o.jobs.SetVideo(s) }

func (o *OpenAI) serve(f *Fake, w http.ResponseWriter, r *http.Request, body []byte, step Step) {
	if got := bearer(r); got != o.Key && !slices.Contains(o.Keys, got) {
		fail(w, Step{Status: 401, Body: fmt.Sprintf(openAIBadKey, mask(got))})
		return
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/audio/speech":
		o.speech(w, r, body, step)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
		o.chat(w, r, body, step)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/responses":
		o.responses(w, r, body, step)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/embeddings":
		o.embeddings(w, r, body, step)
	default:
		o.video(w, r, body, step)
	}
}

func (o *OpenAI) speech(w http.ResponseWriter, r *http.Request, body []byte, step Step) {
	w.Header().Set("x-request-id", "req_fake_openai")
	if step.Status != 0 {
		fail(w, step)
		return
	}
	var req struct {
		Model, Input, Voice, ResponseFormat string
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		fail(w, Step{Status: 400, Body: `{"error":{"message":"We could not parse the JSON body of your request.","type":"invalid_request_error","param":null,"code":null}}`})
		return
	}
	req.Model, _ = m["model"].(string)
	req.Input, _ = m["input"].(string)
	req.Voice, _ = m["voice"].(string)
	req.ResponseFormat, _ = m["response_format"].(string)
	if req.Model == "" || req.Input == "" || req.Voice == "" {
		fail(w, Step{Status: 400, Body: `{"error":{"message":"Missing required parameter.","type":"invalid_request_error","param":null,"code":null}}`})
		return
	}
	size := PCMBytesFor(req.Input)
	if step.Size > 0 {
		size = step.Size
	}
	switch req.ResponseFormat {
	case "pcm":
		w.Header().Set("Content-Type", "audio/pcm")
		stream(w, r, Sine(size), step)
	case "mp3", "":
		w.Header().Set("Content-Type", "audio/mpeg")
		stream(w, r, MP3(size/4), step)
	default:
		fail(w, Step{Status: 400, Body: `{"error":{"message":"Invalid response_format.","type":"invalid_request_error","param":"response_format","code":null}}`})
	}
}

func mask(key string) string {
	if len(key) < 8 {
		return "sk-***"
	}
	return key[:3] + "*****" + key[len(key)-4:]
}

func jsonError(w http.ResponseWriter, status int, body string) {
	fail(w, Step{Status: status, Body: strings.TrimSpace(body)})
}
