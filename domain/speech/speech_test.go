package speech_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/domain/speech"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	speed := func(f float64) *float64 { return &f }
	tests := []struct {
		name  string
		req   speech.Request
		field string
	}{
		{"ok, pcm by default", speech.Request{Model: "m", Input: "hi", Voice: "v"}, ""},
		{"no model", speech.Request{Input: "hi", Voice: "v"}, "model"},
		{"no input", speech.Request{Model: "m", Voice: "v"}, "input"},
		{"no voice", speech.Request{Model: "m", Input: "hi"}, "voice"},
		{"bad format", speech.Request{Model: "m", Input: "hi", Voice: "v", Format: "wav"}, "response_format"},
		{"slow", speech.Request{Model: "m", Input: "hi", Voice: "v", Speed: speed(0.2)}, "speed"},
		{"fast", speech.Request{Model: "m", Input: "hi", Voice: "v", Speed: speed(4.5)}, "speed"},
		{"edge speeds", speech.Request{Model: "m", Input: "hi", Voice: "v", Speed: speed(4)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.req.Validate()
			if tt.field == "" {
				if err != nil || tt.req.Format != speech.PCM && tt.req.Format != speech.MP3 {
					t.Fatalf("Validate = %v, format %q", err, tt.req.Format)
				}
				return
			}
			var de *domain.Error
			if !errors.As(err, &de) || de.Meta["field"] != tt.field {
				t.Fatalf("err = %v, want invalid %s", err, tt.field)
			}
		})
	}
}

func TestCharactersAndCost(t *testing.T) {
	t.Parallel()
	if n := speech.Characters("héllo 👋"); n != 8 { // the emoji is two UTF-16 code units
		t.Fatalf("Characters = %d, want 8", n)
	}
	perM, perS := domain.Micros(15_000_000), domain.Micros(100_000)
	p := catalog.Pricing{PerMillionChars: &perM, PerSecond: &perS}
	// 1000 chars at $15/M = $0.015; 2 s of PCM at $0.10/s = $0.20.
	if c := speech.Cost(p, 1000, 2*speech.PCMBytesPerSecond, speech.PCM); c != 15_000+200_000 {
		t.Fatalf("Cost = %d", c)
	}
	if c := speech.Cost(catalog.Pricing{}, 1000, 1000, speech.PCM); c != 0 {
		t.Fatalf("free endpoint costs %d", c)
	}
}

// TestEstimateHonoursTheSlowestSpeed: per-second pricing reserves for the longest audio the call may produce: a
// slower speed in the request or anywhere in the endpoint's provider.options makes it longer.
func TestEstimateHonoursTheSlowestSpeed(t *testing.T) {
	perSecond := domain.Micros(1_000_000) // $1 a second
	p := catalog.Pricing{PerSecond: &perSecond}
	text := strings.Repeat("a", 100) // 10 s at speed 1
	half, two := 0.5, 2.0
	for _, tc := range []struct {
		name  string
		speed *float64
		opts  map[string]any
		want  float64 // seconds
	}{
		{"default", nil, nil, 10},
		{"request speed", &two, nil, 5},
		{"options speed", nil, map[string]any{"speed": number("0.25")}, 40},
		{"options slower than request", &two, map[string]any{"speed": 0.5}, 20},
		{"request slower than options", &half, map[string]any{"speed": 2.0}, 20},
		{"nested voice settings", nil, map[string]any{"voice_settings": map[string]any{"speed": 0.7}}, 10 / 0.7},
		{"google speaking rate", nil, map[string]any{"speaking_rate": 0.5}, 20},
		{"non-numbers ignored", nil, map[string]any{"speed": "slow", "rate": -1.0}, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := float64(speech.Estimate(p, text, tc.speed, tc.opts, speech.PCM)) / 1e6
			if got < tc.want || got > tc.want+0.001 {
				t.Fatalf("estimate $%.4f, want $%.4f", got, tc.want)
			}
		})
	}
}

// number is a free-form number as an adapter keeps one (domain.Number): as written.
type number string

func (n number) String() string { return string(n) }

func (n number) Float64() (float64, error) { return strconv.ParseFloat(string(n), 64) }
