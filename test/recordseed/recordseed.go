// Package recordseed makes realistic generation records in bulk, for benchmarks and for tests of what holds many
// of them: a deployment's keys, models and providers, its share of failures, fallbacks and sessions, its tokens
// and costs, and its prompts and completions, spread evenly over a span of days, oldest first. Every record is a
// function of its index and the spec, so a load program can name a stored record by its index without reading
// the database. Spec.Entries feeds gormstore's Seed (COPY on PostgreSQL); OldLayout writes records as the releases
// before migration 0010 stored them, to measure and test that migration.
package recordseed

import (
	"context"
	"fmt"
	"iter"
	"math/rand/v2"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/generation"
)

// Spec describes the records to make.
type Spec struct {
	Records int
	// From and To bound the records' creation: record i is created at From + i * (To - From) / Records.
	From, To time.Time
	// Workspaces are the workspaces the keys belong to, a key to each in turn (the first when there is one).
	Workspaces []string
	// Keys is how many keys call, some far more than others (a Zipf law, as a few services make most calls).
	Keys int
	// ContentBytes is about the size of a record's prompt and completion together; 0 stores no content.
	ContentBytes int
}

// models are what the records call: a model, its providers in order of preference, and its prices in micro-dollars
// per million tokens (prompt, completion).
var models = []struct {
	id                 string
	providers          []string
	prompt, completion int64
}{
	{"openai/gpt-4.1-mini", []string{"openai", "azure"}, 400_000, 1_600_000},
	{"anthropic/claude-sonnet-4", []string{"anthropic", "bedrock"}, 3_000_000, 15_000_000},
	{"openai/gpt-4.1", []string{"openai", "azure"}, 2_000_000, 8_000_000},
	{"google/gemini-2.5-flash", []string{"google-ai-studio", "vertex"}, 300_000, 2_500_000},
	{"meta-llama/llama-3.3-70b", []string{"groq", "together", "fireworks"}, 590_000, 790_000},
	{"deepseek/deepseek-r1", []string{"deepseek", "together"}, 550_000, 2_190_000},
	{"mistral/mistral-small", []string{"mistral"}, 100_000, 300_000},
	{"openai/tts-1", []string{"openai"}, 15_000_000, 0},
	{"anthropic/claude-haiku-3.5", []string{"anthropic"}, 800_000, 4_000_000},
	{"qwen/qwen3-235b", []string{"together", "fireworks"}, 200_000, 600_000},
}

// KeyHash is the hash of key k (of Spec.Keys): 64 hex digits, as a key's hash is.
func KeyHash(k int) string { return fmt.Sprintf("%064x", uint64(k)*0x9e3779b97f4a7c15) }

// At is when record i is created.
func (s Spec) At(i int) time.Time {
	span := s.To.Sub(s.From)
	return s.From.Add(time.Duration(float64(span) * float64(i) / float64(max(s.Records, 1)))).UTC().Truncate(time.Microsecond)
}

// ID is record i's id, in the gateway's form (the time it was made, then 32 hex digits).
func (s Spec) ID(i int) string {
	return generation.NewID(s.At(i), fmt.Sprintf("%032x", uint64(i)*0x9e3779b97f4a7c15))
}

// keyOf is record i's key: a Zipf draw, so that a tenth of the keys make most calls.
func (s Spec) keyOf(r *rand.Rand) int {
	return int(rand.NewZipf(r, 1.2, 1, uint64(max(s.Keys, 1)-1)).Uint64())
}

// Entry is record i, with its content when the spec keeps contents.
func (s Spec) Entry(i int) generation.Entry {
	r := rand.New(rand.NewPCG(uint64(i), 0x5eed))
	at := s.At(i)
	key := s.keyOf(r)
	m := models[int(rand.NewZipf(r, 1.1, 1, uint64(len(models)-1)).Uint64())]
	ws := ""
	if len(s.Workspaces) > 0 {
		ws = s.Workspaces[key%len(s.Workspaces)]
	}
	prompt, completion := 50+r.Int64N(2000), 20+r.Int64N(800)
	rec := generation.Record{ID: s.ID(i), RequestID: fmt.Sprintf("req-%d", i), APIType: generation.Completions, WorkspaceID: ws,
		KeyHash: KeyHash(key), Model: m.id, Origin: "", UserAgent: "OpenAI/JS 5.12.0", DataRegion: "global",
		Streamed: r.IntN(3) > 0, CreatedAt: at,
		Counts: generation.Counts{TokensPrompt: prompt, TokensCompletion: completion, NativeTokensPrompt: prompt,
			NativeTokensCompletion: completion}}
	if key%4 == 0 { // keys made by members of the organization
		member := fmt.Sprintf("user_%032x", key)
		rec.UserID = &member
	}
	if r.IntN(10) < 3 { // agents carry a session of a few dozen calls
		session := fmt.Sprintf("session-%d-%d", key, i/40)
		rec.SessionID = &session
	}
	if r.IntN(20) == 0 {
		rec.Counts.NativeTokensReasoning = r.Int64N(completion)
	}
	if r.IntN(4) == 0 {
		rec.Counts.NativeTokensCached = r.Int64N(prompt)
	}
	latency := time.Duration(150+r.IntN(900)) * time.Millisecond
	tried := m.providers[:1]
	if len(m.providers) > 1 && r.IntN(25) == 0 { // the first provider failed: a fallback
		tried = m.providers[:2]
	}
	for j, p := range tried {
		_, upstream, _ := strings.Cut(m.id, "/")
		a := generation.Attempt{ProviderName: p, EndpointID: p + "/" + upstream, UpstreamModel: upstream,
			UpstreamID: fmt.Sprintf("chatcmpl-%x", r.Uint64()), Status: 200, Latency: latency}
		if j < len(tried)-1 {
			a.Status, a.Error, a.Latency = 502, "upstream returned 502", 40*time.Millisecond
		}
		rec.Attempts = append(rec.Attempts, a)
	}
	rec.ProviderName, rec.UpstreamID = tried[len(tried)-1], rec.Attempts[len(tried)-1].UpstreamID
	rec.Status, rec.FinishReason, rec.NativeFinishReason = 200, "stop", "stop"
	switch r.IntN(100) {
	case 0, 1: // the last provider failed too
		rec.Status, rec.FinishReason = 502, "error"
		rec.Attempts[len(tried)-1].Status = 502
		rec.Counts.TokensCompletion, rec.Counts.NativeTokensCompletion = 0, 0
	case 2:
		rec.Status, rec.FinishReason = 429, "error"
		rec.Attempts[len(tried)-1].Status = 429
		rec.Counts.TokensCompletion, rec.Counts.NativeTokensCompletion = 0, 0
	}
	rec.Latency, rec.GenerationTime = latency, latency+time.Duration(rec.Counts.TokensCompletion)*8*time.Millisecond
	cost := (rec.Counts.TokensPrompt*m.prompt + rec.Counts.TokensCompletion*m.completion) / 1_000_000
	rec.TotalCost, rec.UpstreamCost = domain.Micros(cost), domain.Micros(cost)
	e := generation.Entry{Record: rec}
	if s.ContentBytes > 0 {
		in, out := text(r, s.ContentBytes*2/5), text(r, s.ContentBytes*3/5)
		e.Content = &generation.Content{Input: generation.Input{Messages: []generation.Message{
			{Role: "system", Content: "You are a helpful assistant."}, {Role: "user", Content: in}}},
			Output: generation.Output{Completion: out}}
		if rec.Status != 200 {
			e.Content.Output.Completion = ""
			provider := rec.ProviderName
			e.Content.Failure = &generation.Failure{Message: "all providers failed", Status: rec.Status, ProviderName: &provider}
		}
	}
	return e
}

// Entries are the records, oldest first.
func (s Spec) Entries() iter.Seq[generation.Entry] {
	return func(yield func(generation.Entry) bool) {
		for i := range s.Records {
			if !yield(s.Entry(i)) {
				return
			}
		}
	}
}

var words = strings.Fields(`the of and to in is you that it for on are with as this be at have from or an by not
but what all were when we there can your which their said if will each about how up out them then she many some so
these would other into has more her two like him see time could no make than first been its who now people my made
over did down only way find use may water long little very after words called just where most know get through back
much before go good new write our used me man too any day same right look think also around another came come work`)

// text is about n bytes of words.
func text(r *rand.Rand, n int) string {
	var b strings.Builder
	b.Grow(n + 16)
	for b.Len() < n {
		b.WriteString(words[r.IntN(len(words))])
		b.WriteByte(' ')
	}
	return b.String()
}

// OldLayout writes records 0..Records-1 of the spec (in SQL, a million a statement) as a release before migration
// 0010 stored them, into a PostgreSQL database migrated to schema 9: the records' JSON as that release's store
// wrote it, a content for each (about ContentBytes, when set), and no activity (the releases before 0011 kept
// none). Each record has a key (of Keys, in turn), a model and a provider (of a few), a session for a third of
// them, tokens and a cost derived from its index. It returns the records' total cost.
func OldLayout(ctx context.Context, db *gorm.DB, s Spec) (domain.Micros, error) {
	const chunk = 1_000_000
	span := s.To.Sub(s.From).Seconds() / float64(max(s.Records, 1))
	ws := ""
	if len(s.Workspaces) > 0 {
		ws = s.Workspaces[0]
	}
	for lo := 0; lo < s.Records; lo += chunk {
		hi := min(lo+chunk, s.Records) - 1
		stmts := []string{`INSERT INTO generations (id, request_id, upstream_id, api_type, workspace_id, key_hash, user_id, model,
			provider_name, origin, http_referer, user_agent, external_user, session_id, status, streamed, cancelled, is_byok,
			finish_reason, native_finish_reason, latency_us, generation_time_us, moderation_latency_us, tokens_prompt,
			tokens_completion, native_tokens_prompt, native_tokens_completion, native_tokens_completion_images,
			native_tokens_reasoning, native_tokens_cached, num_input_audio_prompt, num_media_prompt, num_media_completion,
			num_search_results, num_fetches, total_cost_micros, upstream_cost_micros, data_region, attempts, flags, created_at)
		SELECT 'gen-' || floor(extract(epoch FROM at))::bigint || '-' || lpad(to_hex(i), 32, '0'), 'req-' || i, 'up-' || i,
			'completions', ?, lpad(to_hex(i % ?), 64, '0'), NULL, 'model-' || (i % 7), 'provider-' || (i % 3), '', '',
			'OpenAI/JS 5.12.0', '', CASE WHEN i % 3 = 0 THEN 'session-' || (i / 40) END, 200, true, false, false, 'stop',
			'stop', 300000, 900000, 0, 100 + i % 900, 50 + i % 400, 100 + i % 900, 50 + i % 400, 0, i % 5, i % 11, 0, 0,
			0, 0, 0, 10 + i % 1000, 10 + i % 1000, 'global',
			'[{"provider_name":"provider-' || (i % 3) || '","endpoint_id":"provider-' || (i % 3) || '/model-' || (i % 7) ||
				'","upstream_model":"model-' || (i % 7) || '","status":200,"latency_us":300000}]', '[]', at
		FROM generate_series(?::bigint, ?::bigint) i, LATERAL (SELECT ?::timestamptz + make_interval(secs => i * ?) AS at) t`}
		args := [][]any{{ws, max(s.Keys, 1), lo, hi, s.From.UTC(), span}}
		if s.ContentBytes > 0 {
			stmts = append(stmts, `INSERT INTO generation_contents (id, input, output, failure)
			SELECT id, '{"messages":[{"role":"user","content":"' || repeat('word ', ?) || i || '"}]}',
				'{"completion":"' || repeat('word ', ?) || '","reasoning":null}', NULL
			FROM (SELECT 'gen-' || floor(extract(epoch FROM ?::timestamptz + make_interval(secs => i * ?)))::bigint || '-' ||
				lpad(to_hex(i), 32, '0') AS id, i FROM generate_series(?::bigint, ?::bigint) i) g`)
			args = append(args, []any{s.ContentBytes * 2 / 5 / 5, s.ContentBytes * 3 / 5 / 5, s.From.UTC(), span, lo, hi})
		}
		for i, q := range stmts {
			if err := db.WithContext(ctx).Exec(q, args[i]...).Error; err != nil {
				return 0, fmt.Errorf("old layout records %d-%d: %w", lo, hi, err)
			}
		}
	}
	var total int64
	if err := db.WithContext(ctx).Raw("SELECT COALESCE(SUM(total_cost_micros), 0) FROM generations").Scan(&total).Error; err != nil {
		return 0, err
	}
	return domain.Micros(total), nil
}
