package speech_test

import (
	"errors"
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
