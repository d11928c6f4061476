package preset_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/preset"
)

// m is an object as an adapter decodes one.
type m = map[string]any

func TestConfigFrom(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		src    preset.Source
		body   m
		config m
		system any // string or nil
		field  string
	}{
		{"chat keeps config, drops request-only", preset.ChatCompletions,
			m{"model": "m", "temperature": 1.0, "stream": false, "messages": []any{m{"role": "user", "content": "x"}}, "tools": []any{}, "user": "u"},
			m{"model": "m", "temperature": 1.0, "tools": []any{}}, nil, ""},
		{"chat system message", preset.ChatCompletions,
			m{"messages": []any{m{"role": "user", "content": "x"}, m{"role": "system", "content": []any{m{"type": "text", "text": "S"}}}}}, m{}, "S", ""},
		{"chat developer message", preset.ChatCompletions, m{"messages": []any{m{"role": "developer", "content": "D"}}}, m{}, "D", ""},
		{"messages system string", preset.Messages, m{"model": "m", "system": "S", "max_tokens": 5.0, "messages": nil},
			m{"model": "m", "max_tokens": 5.0}, "S", ""},
		{"responses instructions", preset.Responses, m{"instructions": "I", "input": "x", "store": false, "service_tier": "auto"},
			m{"service_tier": "auto"}, "I", ""},
		{"temperature bounds", preset.ChatCompletions, m{"temperature": 0.0}, m{"temperature": 0.0}, nil, ""},
		{"temperature too high", preset.ChatCompletions, m{"temperature": 2.01}, nil, nil, "temperature"},
		{"temperature negative", preset.ChatCompletions, m{"temperature": -0.1}, nil, nil, "temperature"},
		{"model not a string", preset.Responses, m{"model": []any{"a"}}, nil, nil, "model"},
		{"bad system parts", preset.Messages, m{"system": []any{m{"type": "image"}}}, nil, nil, "system"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			config, system, err := preset.ConfigFrom(tt.src, tt.body)
			if tt.field != "" {
				var de *domain.Error
				if !errors.As(err, &de) || de.Meta["field"] != tt.field {
					t.Fatalf("err = %v, want invalid %s", err, tt.field)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(config, tt.config) {
				t.Fatalf("config = %v, want %v", config, tt.config)
			}
			if (system == nil) != (tt.system == nil) || system != nil && *system != tt.system {
				t.Fatalf("system = %v, want %v", system, tt.system)
			}
		})
	}
}

func TestAddVersionAndChange(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d := preset.Draft{PresetID: "p", VersionID: "v1", CreatorID: "c", Now: now}
	p, v, err := preset.AddVersion(nil, "ws", "my-slug", 1, d)
	if err != nil || p.Name != "my-slug" || p.Status != preset.Active || *p.DesignatedVersionID != "v1" || v.Number != 1 || v.PresetID != "p" {
		t.Fatalf("new preset: %+v %+v %v", p, v, err)
	}
	if _, _, err := preset.AddVersion(nil, "ws", "Bad Slug", 1, d); err == nil {
		t.Fatal("bad slug accepted")
	}
	archived := preset.Archived
	if err := (preset.Change{Status: &archived}).Apply(&p, now.Add(time.Hour)); err != nil || !p.StatusUpdatedAt.Equal(now.Add(time.Hour)) {
		t.Fatalf("archive: %+v %v", p, err)
	}
	if _, _, err := preset.AddVersion(&p, "ws", "my-slug", 2, d); !errors.Is(err, preset.ErrArchived) {
		t.Fatalf("version on archived preset: %v", err)
	}
	stamp := p.StatusUpdatedAt
	if err := (preset.Change{Status: &archived}).Apply(&p, now.Add(2*time.Hour)); err != nil || p.StatusUpdatedAt != stamp {
		t.Fatal("setting the same status moved status_updated_at")
	}
}
