package app_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/app"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/domain/speech"
	"github.com/switchboard-ai/switchboard/ports"
)

// wire is both ends of a stream in one trace: an upstream body that answers each read with the next of its
// pieces, and a caller's sink that holds what it is given until Flush. The trace says where the gateway read
// from the upstream (where it could have waited) and what each flush sent, in order.
type wire struct {
	pieces []string
	trace  []string
	held   []string // given to the sink since its last flush
	sends  int
	failAt int // the send that finds the caller gone (1 is the first); 0: none
	// lastEOF: the read that brings the last piece says the answer ended (io.EOF with it), as a body whose
	// length or final chunk arrived with its last bytes does.
	lastEOF bool
}

func (w *wire) Read(p []byte) (int, error) {
	if len(w.pieces) == 0 {
		w.trace = append(w.trace, "read EOF")
		return 0, io.EOF
	}
	n := copy(p, w.pieces[0])
	w.trace = append(w.trace, "read "+strings.TrimSpace(strings.ReplaceAll(w.pieces[0][:n], "\n", " ")))
	if w.pieces[0] = w.pieces[0][n:]; w.pieces[0] == "" {
		w.pieces = w.pieces[1:]
	}
	if w.lastEOF && len(w.pieces) == 0 {
		return n, io.EOF
	}
	return n, nil
}

func (w *wire) Close() error {
	w.trace = append(w.trace, "close")
	return nil
}

func (w *wire) Flush() error {
	if len(w.held) == 0 {
		return nil
	}
	sent := "send " + strings.Join(w.held, "|")
	w.held = nil
	if w.sends++; w.sends == w.failAt {
		w.trace = append(w.trace, sent+": the caller is gone")
		return errors.New("broken pipe")
	}
	w.trace = append(w.trace, sent)
	return nil
}

func (w *wire) Synthesize(context.Context, ports.SynthesisRequest) (ports.Audio, error) {
	return ports.Audio{Body: w, Status: 200}, nil
}

func (w *wire) Start(string, string) {}
func (w *wire) Write(p []byte) error { w.held = append(w.held, string(p)); return nil }

// chatWire is the wire seen by chat: an upstream whose events are lines ("DONE" ends the answer) and a sink
// of their text.
type chatWire struct{ *wire }

func (w chatWire) Chat(context.Context, ports.ChatRequest) (ports.ChatReply, error) {
	return ports.ChatReply{Body: w.wire, Decode: func(r io.Reader) ports.ChatStream { return lines{bufio.NewReader(r)} }}, nil
}

func (w chatWire) Start(ports.ChatHead) {}
func (w chatWire) Chunk(c chat.Chunk) error {
	if c.Native != nil {
		w.held = append(w.held, "("+string(c.Native)+")"+c.Content)
	} else {
		w.held = append(w.held, c.Content)
	}
	return nil
}
func (w chatWire) Fail(error) { w.held = append(w.held, "error"); _ = w.Flush() }

func (w chatWire) Finish(*chat.Result, domain.Micros) error {
	w.held = append(w.held, "[DONE]")
	return w.Flush()
}

// lines reads an answer buffered, as the providers' streams do: one chunk a line.
type lines struct{ r *bufio.Reader }

func (l lines) Next() (chat.Chunk, error) {
	line, err := l.r.ReadString('\n')
	if err != nil {
		return chat.Chunk{}, err
	}
	if line = strings.TrimSpace(line); line == "DONE" {
		return chat.Chunk{}, io.EOF
	}
	if native, ok := strings.CutPrefix(line, "~"); ok { // an event of the caller's format carrying no token
		return chat.Chunk{Native: domain.Opaque(native)}, nil
	}
	return chat.Chunk{Content: line}, nil
}

// TestStreamFlushes: an answer's first piece is sent at once; after it, everything one read from the upstream
// brought leaves in one write, sent before the next read, as that read may wait; a caller gone at a flush
// ends the reading and closes the upstream. Speech and chat stream the same way. What came with the answer's end
// is left to the response's end (unsent), which sends it with its own framing in one write.
func TestStreamFlushes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		chat    bool
		pieces  []string
		lastEOF bool
		failAt  int
		want    []string
		unsent  []string // left to the response's end
	}{
		{name: "speech: each read's bytes in one write, before the next read", pieces: []string{"ab", "cd", "efgh"},
			want: []string{"read ab", "send ab", "read cd", "send cd", "read efgh", "send efgh", "read EOF", "close"}},
		{name: "speech: what came with the end is left to the response's end", pieces: []string{"ab", "cd"}, lastEOF: true,
			want: []string{"read ab", "send ab", "read cd", "close"}, unsent: []string{"cd"}},
		{name: "speech: an answer whole in its first read is sent with the response's end", pieces: []string{"abcd"}, lastEOF: true,
			want: []string{"read abcd", "close"}, unsent: []string{"abcd"}},
		{name: "chat: events that came in one read leave in one write", chat: true,
			pieces: []string{"a\n", "b\nc\nd\n", "e\n", "DONE\n"},
			want:   []string{"read a", "send a", "read b c d", "send b|c|d", "read e", "send e", "read DONE", "send [DONE]", "close"}},
		{name: "chat: the first token goes at once even when more came with it", chat: true,
			pieces: []string{"a\nb\n", "c\nDONE\n"},
			want:   []string{"read a b", "send a", "send b", "read c DONE", "send c|[DONE]", "close"}},
		{name: "chat: native events before the first token go with it, and those after it on their own", chat: true,
			pieces: []string{"~start\n", "a\n", "~stop\n", "DONE\n"},
			want:   []string{"read ~start", "read a", "send (start)a", "read ~stop", "send (stop)", "read DONE", "send [DONE]", "close"}},
		{name: "speech: a caller gone stops the reading", pieces: []string{"ab", "cd", "ef"}, failAt: 2,
			want: []string{"read ab", "send ab", "read cd", "send cd: the caller is gone", "close"}},
		{name: "chat: a caller gone stops the reading", chat: true, pieces: []string{"a\n", "b\nc\n", "d\n", "DONE\n"}, failAt: 2,
			want: []string{"read a", "send a", "read b c", "send b|c: the caller is gone", "close"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := &wire{pieces: tt.pieces, failAt: tt.failAt, lastEOF: tt.lastEOF}
			var err error
			if tt.chat {
				price := domain.Micros(1)
				p := newPipeline(t, false, catalog.Model{ID: "acme/chat", Modality: catalog.Chat, Endpoints: []catalog.Endpoint{{
					Provider: "a", UpstreamModel: "m", Pricing: catalog.Pricing{PerMillionPromptTokens: &price, PerMillionCompletionTokens: &price}}}})
				body := requestBody{chat.Request{Model: "acme/chat", Stream: true,
					Messages: []chat.Message{{Role: "user", Content: []chat.Part{{Type: "text", Text: "hi"}}, Text: true}}}}
				_, err = app.NewChat(p.inference, ports.Providers{"a": chatWire{w}}, nil, p.env, 10<<20).Complete(context.Background(), caller, body,
					generation.Caller{RequestID: "req"}, chatWire{w})
			} else {
				p := newPipeline(t, false, voiceModel("a"))
				_, err = app.NewSpeech(p.inference, ports.Providers{"a": w}).Synthesize(context.Background(), caller,
					speech.Request{Model: "acme/voice", Input: "hello world", Voice: "alloy"}, generation.Caller{RequestID: "req"}, w)
			}
			if wantErr := tt.failAt != 0; (err != nil) != wantErr || wantErr && !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want the caller gone: %t", err, wantErr)
			}
			if got := strings.Join(w.trace, "\n"); got != strings.Join(tt.want, "\n") {
				t.Fatalf("trace:\n%s\nwant:\n%s", got, strings.Join(tt.want, "\n"))
			}
			if !slices.Equal(w.held, tt.unsent) {
				t.Fatalf("left unsent: %q, want %q", w.held, tt.unsent)
			}
		})
	}
}

// requestBody is a chat body as a wire format decodes one, naming no preset: the request it holds.
type requestBody struct{ req chat.Request }

func (requestBody) Preset() (*chat.PresetRef, error) { return nil, nil }

func (requestBody) UnderPreset(map[string]any, chat.PresetRef, int64) (int64, error) {
	return 0, errors.New("the body names no preset")
}

func (b requestBody) Request() (chat.Request, error) { return b.req, b.req.Validate() }
