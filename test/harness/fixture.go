package harness

import (
	"time"

	"github.com/switchboard-ai/switchboard/domain/generation"
)

// GenerationEntry is a complete, successful TTS generation with content, for tests that read records.
func GenerationEntry(id, workspace string, at time.Time) generation.Entry {
	session := "sess-1"
	return generation.Entry{
		Record: generation.Record{
			ID: id, RequestID: "req-1", UpstreamID: "up-1", APIType: generation.TTS, WorkspaceID: workspace, KeyHash: "h",
			Model: "openai/tts-1", ProviderName: "openai", Origin: "https://app.example", Referer: "https://app.example/x",
			UserAgent: "sdk/1", ExternalUser: "end-user-7", SessionID: &session, Status: 200, Streamed: true,
			FinishReason: "stop", NativeFinishReason: "stop", Latency: 12345 * time.Microsecond,
			GenerationTime: 2*time.Second + 500*time.Microsecond,
			Counts:         generation.Counts{TokensPrompt: 11, NativeTokensPrompt: 11},
			TotalCost:      165, UpstreamCost: 165, DataRegion: "global",
			Attempts: []generation.Attempt{
				{ProviderName: "elevenlabs", Status: 503, Latency: time.Millisecond, Error: "overloaded", Raw: `{"detail":"busy"}`},
				{ProviderName: "openai", EndpointID: "openai/tts-1", UpstreamModel: "tts-1", UpstreamID: "up-1", Status: 200, Latency: 12 * time.Millisecond},
			},
			Flags:     []string{"email"},
			CreatedAt: at,
		},
		Content: &generation.Content{
			Input:  generation.Input{Messages: []generation.Message{{Role: "user", Content: "Hello there"}}},
			Output: generation.Output{Completion: ""},
		},
	}
}
