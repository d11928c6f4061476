// Package speech is text-to-speech: the request a caller makes, the formats the gateway returns, and how a call
// is priced.
package speech

import (
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/catalog"
)

type Format string

const (
	MP3 Format = "mp3"
	PCM Format = "pcm"
)

// PCM audio is signed 16-bit little-endian, mono, at this rate, whatever the provider sends.
const (
	PCMRate           = 24000
	PCMBytesPerSecond = PCMRate * 2
	// MP3BytesPerSecond estimates an mp3 clip's length from its size (128 kbit/s, what providers are asked for).
	MP3BytesPerSecond = 128_000 / 8
)

// ContentType is the response's media type for a format.
func (f Format) ContentType() string {
	if f == MP3 {
		return "audio/mpeg"
	}
	return pcmType
}

// pcmType is PCM's media type, made once rather than on every call.
var pcmType = fmt.Sprintf("audio/pcm;rate=%d;channels=1", PCMRate)

// MaxInput bounds the text of one call, in characters.
const MaxInput = 100_000

// Request is a validated speech request.
type Request struct {
	Model  string
	Input  string
	Voice  string
	Format Format
	Speed  *float64
	// Options is provider.options: passthrough objects keyed by provider slug.
	Options   map[string]any
	User      string
	SessionID string
}

// Validate checks the request and applies defaults; every error names its field.
func (r *Request) Validate() error {
	switch {
	case r.Model == "":
		return domain.Invalid("model", "is required")
	case r.Input == "":
		return domain.Invalid("input", "is required")
	case utf8.RuneCountInString(r.Input) > MaxInput:
		return domain.Invalid("input", fmt.Sprintf("must be at most %d characters", MaxInput))
	case r.Voice == "":
		return domain.Invalid("voice", "is required")
	}
	if err := domain.CheckCallerIDs(r.SessionID, r.User); err != nil {
		return err
	}
	switch r.Format {
	case "":
		r.Format = PCM
	case MP3, PCM:
	default:
		return domain.Invalid("response_format", "must be mp3 or pcm")
	}
	if r.Speed != nil && (*r.Speed < 0.25 || *r.Speed > 4) {
		return domain.Invalid("speed", "must be a number from 0.25 to 4.0")
	}
	return r.checkText()
}

// checkText refuses text the records cannot store, in every field a call keeps or sends on.
func (r *Request) checkText() error {
	for _, f := range []struct{ name, value string }{
		{"model", r.Model}, {"input", r.Input}, {"voice", r.Voice}, {"user", r.User}, {"session_id", r.SessionID},
	} {
		if err := domain.CheckText(f.name, f.value); err != nil {
			return err
		}
	}
	return catalog.CheckOptions(r.Options)
}

// Characters counts text as the reference bills it: UTF-16 code units.
func Characters(text string) int64 {
	var n int64
	for _, r := range text {
		n += int64(utf16.RuneLen(r))
	}
	return n
}

// Cost prices a call on an endpoint: characters at the per-million price plus seconds of audio at the per-second
// price, exact to the micro-dollar.
func Cost(p catalog.Pricing, chars int64, audioBytes int64, f Format) domain.Micros {
	var c domain.Micros
	if p.PerMillionChars != nil {
		c += p.PerMillionChars.MulDiv(chars, 1_000_000)
	}
	if p.PerSecond != nil {
		c += p.PerSecond.MulDiv(audioBytes, bytesPerSecond(f))
	}
	return c
}

// Estimate is the most a call is expected to cost before it is made: audio is assumed to run at 10 characters
// a second (speech is slower), divided by the slowest speed the call asks for — the request's own, or any speed
// in the endpoint's provider.options passthrough (opts), which the provider applies over it.
func Estimate(p catalog.Pricing, text string, speed *float64, opts map[string]any, f Format) domain.Micros {
	chars := Characters(text)
	seconds := float64(chars) / 10
	if s := slowest(speed, opts); s > 0 {
		seconds /= s
	}
	return Cost(p, chars, int64(seconds*float64(bytesPerSecond(f)))+1, f)
}

// speedKeys are the options providers read as a speaking rate (OpenAI, Deepgram and ElevenLabs' voice_settings
// say speed; Google's speaking_rate), at any depth of the passthrough object.
var speedKeys = map[string]bool{"speed": true, "speaking_rate": true, "speakingrate": true, "rate": true}

// slowest is the smallest positive speed among the request's and the options' (0 when none is given).
func slowest(speed *float64, opts map[string]any) float64 {
	var low float64
	consider := func(v float64) {
		if v > 0 && (low == 0 || v < low) {
			low = v
		}
	}
	if speed != nil {
		consider(*speed)
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if speedKeys[strings.ToLower(k)] {
					consider(number(x))
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(opts)
	return low
}

// number is a JSON number as decoded into any (float64, or json.Number with UseNumber), and 0 for anything else.
func number(v any) float64 {
	switch n := v.(type) {
	case float64:
		return n
	case interface{ Float64() (float64, error) }:
		f, _ := n.Float64()
		return f
	}
	return 0
}

func bytesPerSecond(f Format) int64 {
	if f == MP3 {
		return MP3BytesPerSecond
	}
	return PCMBytesPerSecond
}
