package gormstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/domain/generation"
)

// BenchmarkInsertSpeechSQLite: what the recorder's write of a speech call's entry (its record, its content and its
// charges) costs on SQLite, a record, in batches of the sizes the recorder's 20 ms linger gathers at some 1,500
// calls a second (c=1 in test/benche2e), 4,500 (c=32) and more. Run: go test -run '^$' -bench InsertSpeech
// ./adapters/gormstore/
func BenchmarkInsertSpeechSQLite(b *testing.B) {
	for _, batch := range []int{30, 90, 300} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) { benchmarkInsertSpeech(b, batch) })
	}
}

func benchmarkInsertSpeech(b *testing.B, batch int) {
	ctx := context.Background()
	s := NewGenerationStore(scratchSQLite(b))
	at := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	prompt := "Hello from the benchmark."
	entries := make([]generation.Entry, batch)
	b.ResetTimer()
	for i := 0; i < b.N; i += batch {
		b.StopTimer()
		for j := range entries {
			t := at.Add(time.Duration(i+j) * time.Microsecond)
			entries[j] = generation.Entry{
				Record: generation.Record{ID: generation.NewID(t, fmt.Sprintf("%032x", i+j)), RequestID: "req-3411102d8dc34cedcc8acae3",
					APIType: generation.TTS, WorkspaceID: "7cb10a9e-b27a-4a0b-ae77-c83663c741e8",
					KeyHash: "b9fa797bca5f1416354db8708adba1b1e58c2fa10b114015579dbfb89c4f10b5", Model: "bench/tts",
					ProviderName: "fake", UserAgent: "Go-http-client/1.1", Status: 200, Streamed: true, FinishReason: "stop",
					NativeFinishReason: "stop", Latency: 2 * time.Millisecond, GenerationTime: 2 * time.Millisecond,
					Counts:    generation.Counts{TokensPrompt: 25, NativeTokensPrompt: 25, NumMediaCompletion: 1},
					TotalCost: 375, UpstreamCost: 375, DataRegion: "global",
					Attempts: []generation.Attempt{{ProviderName: "fake", EndpointID: "fake/tts-1", UpstreamModel: "tts-1", Status: 200,
						Latency: 1900 * time.Microsecond}},
					CreatedAt: t},
				Content: &generation.Content{Input: generation.Input{Prompt: &prompt}},
			}
		}
		b.StartTimer()
		if err := s.InsertGenerations(ctx, entries); err != nil {
			b.Fatal(err)
		}
	}
}
