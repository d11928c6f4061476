package gormstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/ports"
)

// GenerationStore stores generation records and their content.
type GenerationStore struct {
	db       *gorm.DB
	prepared prepared
	vacuum   holdsVacuum
	legacy   legacyFlag
	walk     legacyWalk
}

var _ ports.GenerationStore = (*GenerationStore)(nil)

func NewGenerationStore(db *gorm.DB) *GenerationStore { return &GenerationStore{db: db} }

type generationRow struct {
	ID                           string `gorm:"primaryKey"`
	RequestID                    string
	UpstreamID                   string
	APIType                      string `gorm:"column:api_type"`
	WorkspaceID                  string
	KeyHash                      string
	UserID                       *string
	Model                        string
	ProviderName                 string
	PresetID                     *string
	Router                       *string
	Origin                       string
	HTTPReferer                  string `gorm:"column:http_referer"`
	UserAgent                    string
	ExternalUser                 string
	SessionID                    *string
	Status                       int
	Streamed                     bool
	Cancelled                    bool
	IsBYOK                       bool `gorm:"column:is_byok"`
	FinishReason                 string
	NativeFinishReason           string
	LatencyUS                    int64 `gorm:"column:latency_us"`
	GenerationTimeUS             int64 `gorm:"column:generation_time_us"`
	ModerationLatencyUS          int64 `gorm:"column:moderation_latency_us"`
	TokensPrompt                 int64
	TokensCompletion             int64
	NativeTokensPrompt           int64
	NativeTokensCompletion       int64
	NativeTokensCompletionImages int64
	NativeTokensReasoning        int64
	NativeTokensCached           int64
	NumInputAudioPrompt          int64
	NumMediaPrompt               int64
	NumMediaCompletion           int64
	NumSearchResults             int64
	NumFetches                   int64
	TotalCostMicros              int64
	UpstreamCostMicros           int64
	CacheDiscountMicros          *int64
	DataRegion                   string
	ServiceTier                  *string
	WebSearchEngine              *string
	Attempts                     string
	Flags                        string
	CreatedAt                    time.Time `gorm:"autoCreateTime:false"`
}

func (generationRow) TableName() string { return "generations" }

// contentRow is a record's content; CreatedAt is its record's, which PostgreSQL keeps it by (see days.go).
type contentRow struct {
	ID        string `gorm:"primaryKey"`
	Input     string
	Output    string
	Failure   *string
	CreatedAt time.Time `gorm:"autoCreateTime:false"`
}

func (contentRow) TableName() string { return "generation_contents" }

// values are the row's columns in its fields' order (its shape's columns), each as database/sql passes it to the
// driver without converting it: an insert of 46 columns read them by reflection (GORM's Field.ValueOf) and had
// database/sql reflect on each pointer again. TestRowValues checks them against the GORM schema.
func (g *generationRow) values() []any {
	return []any{g.ID, g.RequestID, g.UpstreamID, g.APIType, g.WorkspaceID, g.KeyHash, orNull(g.UserID), g.Model,
		g.ProviderName, orNull(g.PresetID), orNull(g.Router), g.Origin, g.HTTPReferer, g.UserAgent, g.ExternalUser,
		orNull(g.SessionID), int64(g.Status), g.Streamed, g.Cancelled, g.IsBYOK, g.FinishReason, g.NativeFinishReason,
		g.LatencyUS, g.GenerationTimeUS, g.ModerationLatencyUS, g.TokensPrompt, g.TokensCompletion, g.NativeTokensPrompt,
		g.NativeTokensCompletion, g.NativeTokensCompletionImages, g.NativeTokensReasoning, g.NativeTokensCached,
		g.NumInputAudioPrompt, g.NumMediaPrompt, g.NumMediaCompletion, g.NumSearchResults, g.NumFetches,
		g.TotalCostMicros, g.UpstreamCostMicros, orNull(g.CacheDiscountMicros), g.DataRegion, orNull(g.ServiceTier),
		orNull(g.WebSearchEngine), g.Attempts, g.Flags, g.CreatedAt}
}

func (c *contentRow) values() []any {
	return []any{c.ID, c.Input, c.Output, orNull(c.Failure), c.CreatedAt}
}

// orNull is what p points to, or nil (NULL).
func orNull[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// Stored JSON shapes: private to this adapter, free to differ from the API's.
type attemptJSON struct {
	ProviderName  string `json:"provider_name"`
	EndpointID    string `json:"endpoint_id,omitempty"`
	UpstreamModel string `json:"upstream_model,omitempty"`
	UpstreamID    string `json:"upstream_id,omitempty"`
	Status        int    `json:"status"`
	LatencyUS     int64  `json:"latency_us"`
	BYOK          bool   `json:"byok,omitempty"`
	Error         string `json:"error,omitempty"`
	Raw           string `json:"raw,omitempty"`
}

type inputJSON struct {
	Messages []messageJSON `json:"messages,omitempty"`
	Prompt   *string       `json:"prompt,omitempty"`
}

type messageJSON struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type outputJSON struct {
	Completion string  `json:"completion"`
	Reasoning  *string `json:"reasoning"`
}

type failureJSON struct {
	Message      string        `json:"message"`
	Status       int           `json:"status"`
	ProviderName *string       `json:"provider_name"`
	Raw          *string       `json:"raw"`
	Previous     []attemptJSON `json:"previous"`
}

// toAttempts maps attempts for storage; withRaw keeps error bodies, which belong with the content only.
func toAttempts(as []generation.Attempt, withRaw bool) []attemptJSON {
	out := make([]attemptJSON, len(as))
	for i, a := range as {
		out[i] = attemptJSON{ProviderName: a.ProviderName, EndpointID: a.EndpointID, UpstreamModel: a.UpstreamModel,
			UpstreamID: a.UpstreamID, Status: a.Status, LatencyUS: a.Latency.Microseconds(), BYOK: a.BYOK, Error: a.Error}
		if withRaw {
			out[i].Raw = a.Raw
		}
	}
	return out
}

func fromAttempts(as []attemptJSON) []generation.Attempt {
	out := make([]generation.Attempt, len(as))
	for i, a := range as {
		out[i] = generation.Attempt{ProviderName: a.ProviderName, EndpointID: a.EndpointID, UpstreamModel: a.UpstreamModel,
			UpstreamID: a.UpstreamID, Status: a.Status, Latency: time.Duration(a.LatencyUS) * time.Microsecond, BYOK: a.BYOK,
			Error: a.Error, Raw: a.Raw}
	}
	return out
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only plain structs of strings and numbers are marshalled here
	}
	return string(b)
}

// unmarshalStored decodes a stored JSON column. A leading 0x01 is the version byte of JSONB's binary form: a process
// that described the tables before migration 0009 turned these columns from JSONB into TEXT keeps their old types
// in its connections' statement cache, and its COPY writes each value as JSONB, version byte first, into the TEXT
// column. No JSON text begins with that byte, so it is dropped.
func unmarshalStored(s string, v any) error {
	return json.Unmarshal([]byte(strings.TrimPrefix(s, "\x01")), v)
}

func toGenerationRow(r generation.Record) generationRow {
	flags := r.Flags
	if flags == nil {
		flags = []string{}
	}
	c := r.Counts
	return generationRow{
		ID: r.ID, RequestID: r.RequestID, UpstreamID: r.UpstreamID, APIType: string(r.APIType), WorkspaceID: r.WorkspaceID,
		KeyHash: r.KeyHash, UserID: r.UserID, Model: r.Model, ProviderName: r.ProviderName, PresetID: r.PresetID,
		Router: r.Router, Origin: r.Origin, HTTPReferer: r.Referer, UserAgent: r.UserAgent, ExternalUser: r.ExternalUser,
		SessionID: r.SessionID, Status: r.Status, Streamed: r.Streamed, Cancelled: r.Cancelled, IsBYOK: r.BYOK,
		FinishReason: r.FinishReason, NativeFinishReason: r.NativeFinishReason,
		LatencyUS: r.Latency.Microseconds(), GenerationTimeUS: r.GenerationTime.Microseconds(),
		ModerationLatencyUS: r.ModerationLatency.Microseconds(),
		TokensPrompt:        c.TokensPrompt, TokensCompletion: c.TokensCompletion, NativeTokensPrompt: c.NativeTokensPrompt,
		NativeTokensCompletion: c.NativeTokensCompletion, NativeTokensCompletionImages: c.NativeTokensCompletionImages,
		NativeTokensReasoning: c.NativeTokensReasoning, NativeTokensCached: c.NativeTokensCached,
		NumInputAudioPrompt: c.NumInputAudioPrompt, NumMediaPrompt: c.NumMediaPrompt, NumMediaCompletion: c.NumMediaCompletion,
		NumSearchResults: c.NumSearchResults, NumFetches: c.NumFetches,
		TotalCostMicros: int64(r.TotalCost), UpstreamCostMicros: int64(r.UpstreamCost),
		CacheDiscountMicros: (*int64)(r.CacheDiscount), DataRegion: r.DataRegion, ServiceTier: r.ServiceTier,
		WebSearchEngine: r.WebSearchEngine, Attempts: mustJSON(toAttempts(r.Attempts, false)), Flags: mustJSON(flags),
		CreatedAt: r.CreatedAt.UTC(),
	}
}

func (g generationRow) domain() (generation.Record, error) {
	var attempts []attemptJSON
	var flags []string
	if err := unmarshalStored(g.Attempts, &attempts); err != nil {
		return generation.Record{}, fmt.Errorf("generation %s attempts: %w", g.ID, err)
	}
	if err := unmarshalStored(g.Flags, &flags); err != nil {
		return generation.Record{}, fmt.Errorf("generation %s flags: %w", g.ID, err)
	}
	us := func(v int64) time.Duration { return time.Duration(v) * time.Microsecond }
	return generation.Record{
		ID: g.ID, RequestID: g.RequestID, UpstreamID: g.UpstreamID, APIType: generation.APIType(g.APIType),
		WorkspaceID: g.WorkspaceID, KeyHash: g.KeyHash, UserID: g.UserID, Model: g.Model, ProviderName: g.ProviderName,
		PresetID: g.PresetID, Router: g.Router, Origin: g.Origin, Referer: g.HTTPReferer, UserAgent: g.UserAgent,
		ExternalUser: g.ExternalUser, SessionID: g.SessionID, Status: g.Status, Streamed: g.Streamed,
		Cancelled: g.Cancelled, BYOK: g.IsBYOK, FinishReason: g.FinishReason, NativeFinishReason: g.NativeFinishReason,
		Latency: us(g.LatencyUS), GenerationTime: us(g.GenerationTimeUS), ModerationLatency: us(g.ModerationLatencyUS),
		Counts: generation.Counts{TokensPrompt: g.TokensPrompt, TokensCompletion: g.TokensCompletion,
			NativeTokensPrompt: g.NativeTokensPrompt, NativeTokensCompletion: g.NativeTokensCompletion,
			NativeTokensCompletionImages: g.NativeTokensCompletionImages, NativeTokensReasoning: g.NativeTokensReasoning,
			NativeTokensCached: g.NativeTokensCached, NumInputAudioPrompt: g.NumInputAudioPrompt,
			NumMediaPrompt: g.NumMediaPrompt, NumMediaCompletion: g.NumMediaCompletion,
			NumSearchResults: g.NumSearchResults, NumFetches: g.NumFetches},
		TotalCost: domain.Micros(g.TotalCostMicros), UpstreamCost: domain.Micros(g.UpstreamCostMicros),
		CacheDiscount: (*domain.Micros)(g.CacheDiscountMicros), DataRegion: g.DataRegion, ServiceTier: g.ServiceTier,
		WebSearchEngine: g.WebSearchEngine, Attempts: fromAttempts(attempts), Flags: flags, CreatedAt: g.CreatedAt.UTC(),
	}, nil
}

func toContentRow(r *generation.Record, c generation.Content) contentRow {
	in := inputJSON{Prompt: c.Input.Prompt}
	for _, m := range c.Input.Messages {
		in.Messages = append(in.Messages, messageJSON(m))
	}
	row := contentRow{ID: r.ID, Input: mustJSON(in), Output: mustJSON(outputJSON(c.Output)), CreatedAt: r.CreatedAt.UTC()}
	if f := c.Failure; f != nil {
		s := mustJSON(failureJSON{Message: f.Message, Status: f.Status, ProviderName: f.ProviderName, Raw: f.Raw,
			Previous: toAttempts(f.Previous, true)})
		row.Failure = &s
	}
	return row
}

func (c contentRow) domain() (generation.Content, error) {
	var in inputJSON
	var out outputJSON
	if err := unmarshalStored(c.Input, &in); err != nil {
		return generation.Content{}, fmt.Errorf("generation %s input: %w", c.ID, err)
	}
	if err := unmarshalStored(c.Output, &out); err != nil {
		return generation.Content{}, fmt.Errorf("generation %s output: %w", c.ID, err)
	}
	content := generation.Content{Input: generation.Input{Prompt: in.Prompt}, Output: generation.Output(out)}
	for _, m := range in.Messages {
		content.Input.Messages = append(content.Input.Messages, generation.Message(m))
	}
	if c.Failure != nil {
		var f failureJSON
		if err := unmarshalStored(*c.Failure, &f); err != nil {
			return generation.Content{}, fmt.Errorf("generation %s failure: %w", c.ID, err)
		}
		content.Failure = &generation.Failure{Message: f.Message, Status: f.Status, ProviderName: f.ProviderName,
			Raw: f.Raw, Previous: fromAttempts(f.Previous)}
	}
	return content, nil
}

// InsertGenerations writes the batch. On PostgreSQL a record of a day that has no partition (made ahead by
// PrepareDays) fails the batch, which is written again once the partitions of its days are created: a replay of
// old entries, a clock set back, a worker that has not run yet.
func (s *GenerationStore) InsertGenerations(ctx context.Context, batch []generation.Entry) error {
	settled, err := s.insert(ctx, batch)
	if noPartition(err) {
		first, last := batch[0].Record.CreatedAt, batch[0].Record.CreatedAt
		for _, e := range batch[1:] {
			first, last = minTime(first, e.Record.CreatedAt), maxTime(last, e.Record.CreatedAt)
		}
		if err := prepareDays(ctx, s.db, first, last); err != nil {
			return err
		}
		settled, err = s.insert(ctx, batch)
	}
	if err == nil && Dialect(s.db) == Postgres {
		s.vacuum.settled(ctx, s.db, settled)
	}
	return err
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// insert writes the batch, on PostgreSQL in one round trip (see insertBulk), and says how many holds its charges
// settled.
func (s *GenerationStore) insert(ctx context.Context, batch []generation.Entry) (settled int64, err error) {
	if Dialect(s.db) == Postgres {
		records, contents, err := s.shapes()
		if err != nil {
			return 0, err
		}
		rows, contentRows := generationRows(batch)
		settled, err := insertBulk(ctx, s.db, []bulkTable{{records, rows}, {contents, contentRows}}, charges(batch, Postgres))
		if !errors.Is(err, errStored) {
			return settled, err
		}
		// Some of these were stored before (a batch written again after a crash): skip them and their charges.
	}
	return s.insertEach(ctx, batch)
}

// shapes are the tables a batch is written to: the records and their contents.
func (s *GenerationStore) shapes() (records, contents *shape, err error) {
	if records, err = shapeOf(s.db, reflect.TypeFor[generationRow]()); err != nil {
		return nil, nil, err
	}
	contents, err = shapeOf(s.db, reflect.TypeFor[contentRow]())
	return records, contents, err
}

// insertEach writes the batch in one transaction a record at a time, skipping the records stored before (a batch
// written again after a crash) and their charges: SQLite's way, and PostgreSQL's when insertBulk met such a record.
// Every statement has one shape whatever the batch, so SQLite parses each once (see prepared). It says how many
// holds the batch settled.
func (s *GenerationStore) insertEach(ctx context.Context, batch []generation.Entry) (settled int64, err error) {
	records, contents, err := s.shapes()
	if err != nil {
		return 0, err
	}
	err = transaction(ctx, s.db, &s.prepared, func(tx *txStatements) error {
		fresh := make([]generation.Entry, 0, len(batch))
		for _, e := range batch {
			row := toGenerationRow(e.Record)
			n, err := tx.exec(ctx, records.insert, row.values()...)
			if err != nil {
				return fmt.Errorf("insert generation: %w", err)
			}
			if n == 0 {
				continue // stored before
			}
			fresh = append(fresh, e)
			if e.Content != nil {
				c := toContentRow(&e.Record, *e.Content)
				if _, err := tx.exec(ctx, contents.insert, c.values()...); err != nil {
					return fmt.Errorf("insert generation content: %w", err)
				}
			}
		}
		if len(fresh) == 0 {
			return nil
		}
		for _, st := range charges(fresh, Dialect(s.db)) {
			n, err := tx.exec(ctx, st.sql, st.args...)
			if err != nil {
				return fmt.Errorf("book charges: %w", err)
			}
			if st.settles {
				settled += n
			}
		}
		return nil
	})
	return settled, err
}

// generationRows are the values of the batch's record rows and content rows.
func generationRows(batch []generation.Entry) (records, contents [][]any) {
	records = make([][]any, len(batch))
	contents = make([][]any, 0, len(batch))
	for i, e := range batch {
		row := toGenerationRow(e.Record)
		records[i] = row.values()
		if e.Content != nil {
			c := toContentRow(&e.Record, *e.Content)
			contents = append(contents, c.values())
		}
	}
	return records, contents
}

func (s *GenerationStore) Generation(ctx context.Context, id string) (generation.Record, error) {
	var r generationRow
	if err := s.take(ctx, &r, id); err != nil {
		return generation.Record{}, err
	}
	return r.domain()
}

// GenerationContent reads a content; on PostgreSQL, when its day holds none, from the contents written before
// they were kept by day, while they are kept.
func (s *GenerationStore) GenerationContent(ctx context.Context, id string) (generation.Content, error) {
	var c contentRow
	err := s.take(ctx, &c, id)
	if errors.Is(err, generation.ErrNotFound) && Dialect(s.db) == Postgres && s.legacy.kept(ctx, s.db) {
		err = s.takeLegacy(ctx, &c, id)
	}
	if err != nil {
		return generation.Content{}, err
	}
	return c.domain()
}

// take reads the row whose id is id into row (a *generationRow or *contentRow) by a statement SQLite prepares once:
// parsing SELECT of the record's 46 columns cost more than running it. On PostgreSQL it reads the days the id's
// time allows (see byID).
func (s *GenerationStore) take(ctx context.Context, row any, id string) error {
	rv := reflect.ValueOf(row).Elem()
	sh, err := shapeOf(s.db, rv.Type())
	if err != nil {
		return err
	}
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	postgres := Dialect(s.db) == Postgres
	query := sh.byKey
	if postgres {
		query += byID(id)
	}
	err = s.prepared.queryRow(ctx, sqlDB, postgres, query, id).Scan(sh.pointers(ctx, rv)...)
	if errors.Is(err, sql.ErrNoRows) {
		return generation.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("select from %s: %w", sh.table, translate(s.db, err))
	}
	return nil
}

// byID narrows a lookup by id to the days of the partitions that may hold it: from the day of the time the id
// carries through the day MaxIDSkew later (generation.IDTime). The bounds are literals, a day's apart at
// least, so that PostgreSQL leaves the other partitions out when it plans the statement, and a plan it keeps for
// the statement's text (generic) names two partitions, not all of them: a parameter's bounds left it to prune
// each time it ran, after locking every partition. An id that carries no time is looked for in every day.
func byID(id string) string {
	at, ok := generation.IDTime(id)
	if !ok {
		return ""
	}
	from := generation.Day(at)
	return " AND created_at >= " + pgTime(from) + " AND created_at < " + pgTime(generation.Day(at.Add(generation.MaxIDSkew)).AddDate(0, 0, 1))
}

// legacyContentsQuery reads a content written before contents were kept by day; it has no created_at of its own.
const legacyContentsQuery = "SELECT id, input, output, failure, 'epoch'::timestamptz FROM " + legacyContents + " WHERE id = ?"

func (s *GenerationStore) takeLegacy(ctx context.Context, c *contentRow, id string) error {
	err := s.db.WithContext(ctx).Raw(legacyContentsQuery, id).Row().Scan(&c.ID, &c.Input, &c.Output, &c.Failure, &c.CreatedAt)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return generation.ErrNotFound
	case undefinedTable(err): // dropped by another replica's retention
		s.legacy.set(false)
		return generation.ErrNotFound
	case err != nil:
		return fmt.Errorf("select from %s: %w", legacyContents, err)
	}
	return nil
}

// undefinedTable reports a statement on a table that does not exist.
func undefinedTable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42P01"
}

// legacyFlag says whether generation_contents_legacy exists, as last seen: looked up once, and cleared when a
// lookup finds it gone or this store drops it.
type legacyFlag struct{ state atomic.Int32 } // 0 unknown, 1 kept, 2 gone

func (f *legacyFlag) set(kept bool) {
	if kept {
		f.state.Store(1)
	} else {
		f.state.Store(2)
	}
}

func (f *legacyFlag) kept(ctx context.Context, db *gorm.DB) bool {
	if st := f.state.Load(); st != 0 {
		return st == 1
	}
	var kept bool
	if err := db.WithContext(ctx).Raw("SELECT to_regclass(?) IS NOT NULL", legacyContents).Scan(&kept).Error; err != nil {
		return true // unknown: look, and learn from the lookup
	}
	f.set(kept)
	return kept
}
