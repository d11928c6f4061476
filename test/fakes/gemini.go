package fakes

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Gemini errors in Google's RPC shape.
const (
	GeminiRateLimited = `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerMinutePerProjectPerModel"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"1.5s"}]}}`
	GeminiDailyQuota  = `{"error":{"code":429,"message":"Quota exceeded.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerDayPerProjectPerModel"}]}]}}`
	GeminiOverloaded  = `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`
	geminiBadKey      = `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}`
)

// Gemini fakes generativelanguage.googleapis.com/v1beta: :streamGenerateContent?alt=sse for TTS, chat
// (gemini_chat.go, also :generateContent), :batchEmbedContents (embed.go) and, in gemini_video.go, Veo. Safety, when set, answers a 200 without audio (finishReason SAFETY).
type Gemini struct {
	*Fake
	Key    string
	Safety bool
	// Rate is the PCM rate announced in inlineData's mimeType (24000 unless set).
	Rate int
	// EmbedUsage adds usageMetadata to embeddings answers, which Gemini's batchEmbedContents does not always send.
	EmbedUsage bool
	jobs       videoJobs
	Storage    *Storage
}

func NewGemini(t testing.TB, key string) *Gemini {
	g := &Gemini{Key: key}
	g.Fake = newFake(t, g.serve)
	g.Storage = newStorage(t, &g.jobs)
	return g
}

// SetVideo scripts the Veo jobs created from now on.
func (g *Gemini) SetVideo(s VideoScript) { g.jobs.SetVideo(s) }

func (g *Gemini) BaseURL() string { return g.URL + "/v1beta" }

func (g *Gemini) serve(f *Fake, w http.ResponseWriter, r *http.Request, body []byte, step Step) {
	if r.Header.Get("x-goog-api-key") != g.Key && r.URL.Query().Get("key") != g.Key {
		jsonError(w, 400, geminiBadKey)
		return
	}
	if step.Status != 0 {
		fail(w, step)
		return
	}
	if strings.HasSuffix(r.URL.Path, ":batchEmbedContents") {
		g.batchEmbed(w, r, body)
		return
	}
	if strings.HasSuffix(r.URL.Path, ":streamGenerateContent") || strings.HasSuffix(r.URL.Path, ":generateContent") {
		var req geminiChatRequest
		if err := json.Unmarshal(body, &req); err != nil {
			geminiInvalid(w, "Invalid JSON payload received.")
			return
		}
		if strings.HasSuffix(r.URL.Path, ":streamGenerateContent") && r.URL.Query().Get("alt") != "sse" {
			geminiInvalid(w, "this fake streams only as server-sent events: use alt=sse")
			return
		}
		if slices.Contains(req.GenerationConfig.ResponseModalities, "AUDIO") {
			g.tts(w, r, body, step)
		} else {
			g.chat(w, r, req, step)
		}
		return
	}
	g.video(w, r, body, step)
}

func (g *Gemini) tts(w http.ResponseWriter, r *http.Request, body []byte, step Step) {
	var req struct {
		Contents []struct {
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"contents"`
		GenerationConfig struct {
			ResponseModalities []string `json:"responseModalities"`
		} `json:"generationConfig"`
	}
	if err := json.Unmarshal(body, &req); err != nil || len(req.Contents) == 0 || len(req.Contents[0].Parts) == 0 {
		jsonError(w, 400, `{"error":{"code":400,"message":"Invalid JSON payload received.","status":"INVALID_ARGUMENT"}}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	usage := `"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":120,"totalTokenCount":129}`
	if g.Safety {
		fmt.Fprintf(w, "data: {\"candidates\":[{\"finishReason\":\"SAFETY\",\"index\":0}],%s}\r\n\r\n", usage)
		return
	}
	rate := g.Rate
	if rate == 0 {
		rate = 24000
	}
	size := PCMBytesFor(req.Contents[0].Parts[0].Text) * int64(rate) / 24000
	if step.Size > 0 {
		size = step.Size
	}
	// Each event carries its own base64 (with its own padding); odd sizes split samples between events.
	pcm := Sine(size)
	buf := make([]byte, 3001)
	sent := 0
	for {
		n, err := io.ReadFull(pcm, buf)
		if n > 0 {
			if step.Abort > 0 && sent+n >= step.Abort {
				fl.Flush()
				panic(http.ErrAbortHandler)
			}
			fmt.Fprintf(w, "data: {\"candidates\":[{\"content\":{\"parts\":[{\"inlineData\":{\"mimeType\":\"audio/L16;codec=pcm;rate=%d\",\"data\":\"%s\"}}],\"role\":\"model\"},\"index\":0}],%s}\r\n\r\n",
				rate, base64.StdEncoding.EncodeToString(buf[:n]), usage)
			fl.Flush()
			sent += n
			if step.HoldAfter > 0 && sent >= step.HoldAfter { // stalled until the caller gives up
				<-r.Context().Done()
				return
			}
		}
		if err != nil {
			break
		}
	}
	fmt.Fprintf(w, "data: {\"candidates\":[{\"finishReason\":\"STOP\",\"index\":0}],%s}\r\n\r\n", usage)
}

func itoa(n int) string { return strconv.Itoa(n) }
