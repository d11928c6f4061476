package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/switchboard-ai/switchboard/adapters/gormstore"
	"github.com/switchboard-ai/switchboard/domain/generation"
)

// seedID is the id of the i-th seeded record: in the gateway's form, gen-<unix seconds>-<32 hex digits>, the time
// its record was made (the records are a millisecond apart from then: 10 million span under three hours, within
// the day after an id's time where a store looks for its record).
func seedID(i int) string { return fmt.Sprintf("gen-1700000000-%032x", i) }

// seed writes rows generation records into the default workspace through the store's bulk path (gormstore's Seed:
// COPY on PostgreSQL, the recorder's own batches on SQLite), and says how many a second it wrote.
func seed(ctx context.Context, dbURL string, rows int) (float64, error) {
	if rows == 0 {
		return 0, nil
	}
	db, closeDB, err := gormstore.Open(ctx, gormstore.Config{URL: dbURL}, slog.New(slog.DiscardHandler))
	if err != nil {
		return 0, err
	}
	defer closeDB()
	var ws string
	if err := db.WithContext(ctx).Raw(`SELECT id FROM workspaces WHERE slug = 'default'`).Scan(&ws).Error; err != nil || ws == "" {
		return 0, fmt.Errorf("default workspace: %v", err)
	}
	created := time.Unix(1700000000, 0).UTC()
	entries := func(yield func(generation.Entry) bool) {
		for i := range rows {
			if !yield(generation.Entry{Record: generation.Record{
				ID: seedID(i), RequestID: "req-bench", APIType: generation.TTS, WorkspaceID: ws, KeyHash: "seeded",
				Model: "bench/tts", ProviderName: "fake", Status: 200, Streamed: true, FinishReason: "stop",
				Latency: 3 * time.Millisecond, GenerationTime: 9 * time.Millisecond, TotalCost: 375, UpstreamCost: 375,
				Attempts:  []generation.Attempt{{ProviderName: "fake", UpstreamModel: "tts-1", Status: 200, Latency: 3 * time.Millisecond}},
				CreatedAt: created.Add(time.Duration(i) * time.Millisecond),
			}}) {
				return
			}
		}
	}
	start := time.Now()
	store := gormstore.NewGenerationStore(db)
	if _, err := store.Seed(ctx, created, created.Add(time.Duration(rows)*time.Millisecond), entries); err != nil {
		return 0, fmt.Errorf("seed: %w", err)
	}
	return float64(rows) / time.Since(start).Seconds(), nil
}
