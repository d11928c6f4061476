package preset_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/preset"
)

func body(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestConfigFrom(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		src    preset.Source
		body   string
		config string
		system any // string or nil
		field  string
	}{
		{"chat keeps config, drops request-only", preset.ChatCompletions,
			`{"model":"m","temperature":1,"stream":false,"messages":[{"role":"user","content":"x"}],"tools":[],"user":"u"}`,
			`{"model":"m","temperature":1,"tools":[]}`, nil, ""},
		{"chat system message", preset.ChatCompletions,
			`{"messages":[{"role":"user","content":"x"},{"role":"system","content":[{"type":"text","text":"S"}]}]}`, `{}`, "S", ""},
		{"chat developer message", preset.ChatCompletions, `{"messages":[{"role":"developer","content":"D"}]}`, `{}`, "D", ""},
		{"messages system string", preset.Messages, `{"model":"m","system":"S","max_tokens":5,"messages":null}`, `{"model":"m","max_tokens":5}`, "S", ""},
		{"responses instructions", preset.Responses, `{"instructions":"I","input":"x","store":false,"service_tier":"auto"}`, `{"service_tier":"auto"}`, "I", ""},
		{"temperature bounds", preset.ChatCompletions, `{"temperature":0}`, `{"temperature":0}`, nil, ""},
		{"temperature too high", preset.ChatCompletions, `{"temperature":2.01}`, "", nil, "temperature"},
		{"temperature negative", preset.ChatCompletions, `{"temperature":-0.1}`, "", nil, "temperature"},
		{"model not a string", preset.Responses, `{"model":["a"]}`, "", nil, "model"},
		{"bad system parts", preset.Messages, `{"system":[{"type":"image"}]}`, "", nil, "system"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			config, system, err := preset.ConfigFrom(tt.src, body(t, tt.body))
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
			if !reflect.DeepEqual(config, body(t, tt.config)) {
				t.Fatalf("config = %v, want %s", config, tt.config)
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
