package gemini

import (
	"cmp"
	"context"
	"encoding/json"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/switchboard-ai/switchboard/adapters/internal/jsonenc"
	"github.com/switchboard-ai/switchboard/adapters/upstream"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/ports"
)

var _ ports.ChatProvider = (*Client)(nil)

// Chat calls streamGenerateContent?alt=sse with the request translated into contents, systemInstruction,
// generationConfig and functionDeclarations, and reads its events into chunks. provider.options go under the
// translated fields (safetySettings, cachedContent, ...).
func (c *Client) Chat(ctx context.Context, req ports.ChatRequest) (ports.ChatReply, error) {
	body, err := ChatBody(req)
	if err != nil {
		return ports.ChatReply{}, err
	}
	u := c.cfg.BaseURL + "/models/" + url.PathEscape(req.UpstreamModel) + ":streamGenerateContent?alt=sse"
	hreq, err := upstream.NewJSONRequest(ctx, u, body)
	if err != nil {
		return ports.ChatReply{}, upstream.Internal(err)
	}
	resp, err := c.call(hreq)
	if err != nil {
		return ports.ChatReply{}, err
	}
	return ports.ChatReply{Body: resp.Body, Decode: func(r io.Reader) ports.ChatStream { return upstream.ScrubChat(newChatStream(r, resp.StatusCode), hreq) },
		UpstreamID: resp.Header.Get("X-Goog-Request-Id")}, nil
}

// ChatBody is the generateContent request for a chat request. A conversation Gemini always refuses is not sent
// (an *ports.UpstreamError another endpoint may take): one without contents (a system prompt alone), or with a
// tool's result that names no function (Gemini matches results to calls by name: one answering a call id no
// earlier message made, without a name of its own).
func ChatBody(req ports.ChatRequest) (map[string]any, error) {
	r := req.Request
	system, contents, unnamed := contents(r)
	switch {
	case len(contents) == 0:
		return nil, untranslatable("messages", "a message with content besides the system prompt")
	case unnamed >= 0:
		return nil, untranslatable(r.MessageField(unnamed, ".tool_call_id"),
			"a tool result to answer a call an earlier message made, or to name its function (name)")
	}
	out := map[string]any{"contents": contents}
	if system != "" {
		out["systemInstruction"] = map[string]any{"parts": []any{map[string]any{"text": system}}}
	}
	// generationConfig is the options' one (thinkingConfig...) under the translated fields, with
	// chat.DefaultMaxTokens when neither the request nor the options set maxOutputTokens: the limit the call's
	// budget was reserved for.
	gc := map[string]any{}
	if opts, ok := req.Options["generationConfig"].(map[string]any); ok {
		maps.Copy(gc, opts)
	}
	if !chat.OptionCapped(gc, "maxOutputTokens") {
		gc["maxOutputTokens"] = int64(chat.DefaultMaxTokens)
	}
	if r.Temperature != nil {
		gc["temperature"] = *r.Temperature
	}
	if r.TopP != nil {
		gc["topP"] = *r.TopP
	}
	if r.MaxTokens != nil {
		gc["maxOutputTokens"] = *r.MaxTokens
	}
	if len(r.Stop) > 0 {
		gc["stopSequences"] = r.Stop
	}
	if r.Seed != nil {
		gc["seed"] = *r.Seed
	}
	var format struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	}
	if r.ResponseFormat != nil && json.Unmarshal(r.ResponseFormat, &format) == nil {
		switch format.Type {
		case "json_object":
			gc["responseMimeType"] = "application/json"
		case "json_schema":
			gc["responseMimeType"] = "application/json"
			if format.JSONSchema.Schema != nil {
				gc["responseJsonSchema"] = format.JSONSchema.Schema
			}
		}
	}
	out["generationConfig"] = gc
	if len(r.Tools) > 0 {
		decls := make([]any, len(r.Tools))
		for i, t := range r.Tools {
			d := map[string]any{"name": t.Name}
			if t.Description != "" {
				d["description"] = t.Description
			}
			if t.Parameters != nil {
				d["parametersJsonSchema"] = json.RawMessage(t.Parameters)
			}
			decls[i] = d
		}
		out["tools"] = []any{map[string]any{"functionDeclarations": decls}}
		if mode := functionMode(r.ToolChoice); mode != nil {
			out["toolConfig"] = map[string]any{"functionCallingConfig": mode}
		}
	}
	return upstream.Merge(req.Options, out), nil
}

// untranslatable is the error for a conversation Gemini would refuse, naming the field: not sent, and the
// model's other endpoints may take it (a 400 when none does).
func untranslatable(field, needs string) error {
	return upstream.Unfit(field + ": google-ai-studio needs " + needs)
}

// functionMode translates OpenAI's tool_choice: auto, none, required (Gemini's ANY), or a named function (ANY
// limited to it).
func functionMode(raw domain.Opaque) map[string]any {
	if raw == nil {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "none":
			return map[string]any{"mode": "NONE"}
		case "required":
			return map[string]any{"mode": "ANY"}
		}
		return map[string]any{"mode": "AUTO"}
	}
	var named struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(raw, &named) == nil && named.Function.Name != "" {
		return map[string]any{"mode": "ANY", "allowedFunctionNames": []string{named.Function.Name}}
	}
	return nil
}

type content struct {
	Role  string `json:"role"`
	Parts []any  `json:"parts"`
}

// contents translates the conversation: system and developer messages become the system instruction; the
// assistant is the "model"; a tool's result is a functionResponse part of a user turn, named after the call it
// answers (Gemini matches results to calls by name); consecutive turns of one role are joined into one.
// unnamed is the index of the first tool result that names no function, -1 when none.
func contents(r chat.Request) (system string, out []content, unnamed int) {
	var systems []string
	unnamed = -1
	called := map[string]string{} // tool call id -> function name
	for i, m := range r.Messages {
		role := "user"
		var parts []any
		switch m.Role {
		case "system", "developer":
			if t := m.Joined(); t != "" {
				systems = append(systems, t)
			}
			continue
		case "tool":
			name := cmp.Or(called[m.ToolCallID], m.Name)
			if name == "" && unnamed < 0 {
				unnamed = i
			}
			parts = []any{map[string]any{"functionResponse": map[string]any{"name": name,
				"response": map[string]any{"content": m.Joined()}}}}
		default:
			if m.Role == "assistant" {
				role = "model"
			}
			parts = chatParts(r.Translatable(m.Content))
			for _, tc := range m.ToolCalls {
				called[tc.ID] = tc.Name
				args := json.RawMessage(tc.Arguments)
				if !json.Valid(args) {
					args = json.RawMessage(`{}`)
				}
				parts = append(parts, map[string]any{"functionCall": map[string]any{"name": tc.Name, "args": args}})
			}
		}
		if len(parts) == 0 {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Parts = append(out[n-1].Parts, parts...)
			continue
		}
		out = append(out, content{Role: role, Parts: parts})
	}
	return strings.Join(systems, "\n\n"), out, unnamed
}

// chatParts translates content parts: text as text (empty ones dropped), a data: URL image as inlineData,
// another URL as fileData; other kinds as they came.
func chatParts(in []chat.Part) []any {
	var out []any
	for _, p := range in {
		switch p.Type {
		case "text":
			if p.Text != "" {
				out = append(out, map[string]any{"text": p.Text})
			}
		case "image_url":
			out = append(out, imagePart(p.ImageURL))
		default:
			out = append(out, json.RawMessage(p.Raw))
		}
	}
	return out
}

func imagePart(u string) map[string]any {
	if rest, ok := strings.CutPrefix(u, "data:"); ok {
		if meta, data, ok := strings.Cut(rest, ","); ok {
			if mediaType, ok := strings.CutSuffix(meta, ";base64"); ok {
				return map[string]any{"inlineData": map[string]any{"mimeType": mediaType, "data": data}}
			}
		}
	}
	mt := "image/jpeg"
	if pu, err := url.Parse(u); err == nil {
		if t := mime.TypeByExtension(path.Ext(pu.Path)); strings.HasPrefix(t, "image/") {
			mt = t
		}
	}
	return map[string]any{"fileData": map[string]any{"mimeType": mt, "fileUri": u}}
}

// response is what the gateway reads of one event of streamGenerateContent, a GenerateContentResponse: the first
// candidate's parts and finish reason, the prompt's block reason, the usage, the error. Objects held by pointer in
// encoding/json's terms are held by value with has* saying whether they were there (a null clears one, a second
// reads into the first); a list keeps what an earlier one of the same key left within its capacity, as
// encoding/json's slices do.
type response struct {
	candidate candidate
	// candidates is how many candidates the event has; only the first is read.
	candidates  int
	blockReason string
	usage       usageMetadata
	err         responseError
	// hasFeedback says a promptFeedback object was there, hasUsage a usageMetadata, hasErr an error.
	hasFeedback, hasUsage, hasErr bool
}

type candidate struct {
	parts        []part
	finishReason string
}

type part struct {
	text    string
	thought bool
	call    functionCall
	hasCall bool
}

type functionCall struct {
	name string
	args []byte // as it came, as a json.RawMessage
}

type usageMetadata struct{ promptTokenCount, candidatesTokenCount, thoughtsTokenCount, cachedContentTokenCount int64 }

type responseError struct {
	code    int64
	message string
}

// decodeResponse reads an event in one pass over its bytes (jsonenc.Scanner), as encoding/json would decode it:
// keys matched without regard to case, unknown members skipped (and checked to be JSON), a value of the wrong
// type an error, a null leaving a string, a number or a boolean as it was and clearing a list or an object held
// by pointer. goccy/go-json before decoded each event, one a token, by reflection.
func decodeResponse(data []byte) (ev response, err error) {
	s := jsonenc.NewScanner(data)
	err = s.Document(func(key []byte) error {
		switch {
		case jsonenc.Is(key, "candidates"):
			if s.Null() {
				ev.candidate, ev.candidates = candidate{}, 0
				return nil
			}
			n := 0
			err := s.Array(func(i int) error {
				n = i + 1
				if i == 0 {
					return readCandidate(&s, &ev.candidate)
				}
				var rest candidate
				return readCandidate(&s, &rest)
			})
			if ev.candidates = n; n == 0 { // [] is a new list: what an earlier one left is gone
				ev.candidate = candidate{}
			}
			return err
		case jsonenc.Is(key, "promptfeedback"):
			return jsonenc.Held(&s, &ev.hasFeedback, &ev.blockReason, func(key []byte) error {
				if jsonenc.Is(key, "blockreason") {
					return s.Str(&ev.blockReason)
				}
				return s.Skip()
			})
		case jsonenc.Is(key, "usagemetadata"):
			u := &ev.usage
			return jsonenc.Held(&s, &ev.hasUsage, u, func(key []byte) error {
				switch {
				case jsonenc.Is(key, "prompttokencount"):
					return s.Int(&u.promptTokenCount)
				case jsonenc.Is(key, "candidatestokencount"):
					return s.Int(&u.candidatesTokenCount)
				case jsonenc.Is(key, "thoughtstokencount"):
					return s.Int(&u.thoughtsTokenCount)
				case jsonenc.Is(key, "cachedcontenttokencount"):
					return s.Int(&u.cachedContentTokenCount)
				}
				return s.Skip()
			})
		case jsonenc.Is(key, "error"):
			e := &ev.err
			return jsonenc.Held(&s, &ev.hasErr, e, func(key []byte) error {
				switch {
				case jsonenc.Is(key, "code"):
					return s.Int(&e.code)
				case jsonenc.Is(key, "message"):
					return s.Str(&e.message)
				}
				return s.Skip()
			})
		}
		return s.Skip()
	})
	return ev, err
}

// readCandidate reads a candidate into c: its content's parts and its finish reason. A candidate is held by value
// in its list: null leaves it.
func readCandidate(s *jsonenc.Scanner, c *candidate) error {
	if s.Null() {
		return nil
	}
	return s.Object(func(key []byte) error {
		switch {
		case jsonenc.Is(key, "content"):
			if s.Null() {
				return nil
			}
			return s.Object(func(key []byte) error {
				if jsonenc.Is(key, "parts") {
					return readParts(s, &c.parts)
				}
				return s.Skip()
			})
		case jsonenc.Is(key, "finishreason"):
			return s.Str(&c.finishReason)
		}
		return s.Skip()
	})
}

// readParts reads a list of parts into parts as encoding/json fills a slice: each item read into the one already
// there (what an earlier list left within the slice's capacity), the rest cut; null and [] leave no list.
func readParts(s *jsonenc.Scanner, parts *[]part) error {
	if s.Null() {
		*parts = nil
		return nil
	}
	n := 0
	err := s.Array(func(i int) error {
		n = i + 1
		if i < cap(*parts) {
			*parts = (*parts)[:i+1]
		} else {
			*parts = append(*parts, part{})
		}
		p := &(*parts)[i]
		if s.Null() {
			return nil
		}
		return s.Object(func(key []byte) error {
			switch {
			case jsonenc.Is(key, "text"):
				return s.Str(&p.text)
			case jsonenc.Is(key, "thought"):
				return s.Bool(&p.thought)
			case jsonenc.Is(key, "functioncall"):
				if s.Null() {
					p.call, p.hasCall = functionCall{}, false
					return nil
				}
				p.hasCall = true
				return s.Object(func(key []byte) error {
					switch {
					case jsonenc.Is(key, "name"):
						return s.Str(&p.call.name)
					case jsonenc.Is(key, "args"):
						args, err := s.Raw()
						if err == nil {
							p.call.args = args
						}
						return err
					}
					return s.Skip()
				})
			}
			return s.Skip()
		})
	})
	*parts = (*parts)[:n]
	if n == 0 { // [] is a new list: what an earlier one left is gone
		*parts = nil
	}
	return err
}

// chatStream reads Gemini's events into chunks. Gemini has no end marker: the event with a finish reason is
// the last, and it carries the usage (thoughts are billed as completion tokens). A function call comes whole,
// with no id: the gateway numbers it (call_<n>), and its finish reason, STOP to Gemini, is tool_calls.
type chatStream struct {
	sse      *upstream.SSE
	status   int
	calls    int
	finished bool
}

func newChatStream(body io.Reader, status int) *chatStream {
	return &chatStream{sse: upstream.NewSSE(body), status: status}
}

func (s *chatStream) Next() (chat.Chunk, error) {
	for {
		if s.finished {
			return chat.Chunk{}, io.EOF
		}
		_, data, err := s.sse.Next()
		if err != nil {
			return chat.Chunk{}, upstream.Broke(err, s.status)
		}
		ev, err := decodeResponse(data)
		if err != nil {
			return chat.Chunk{}, upstream.BadEvent(data, s.status, err)
		}
		if ev.hasErr {
			status := int(ev.err.code)
			if status < 400 {
				status = http.StatusInternalServerError
			}
			return chat.Chunk{}, upstream.EventFailed(status, ev.err.message, data)
		}
		var out chat.Chunk
		native := ""
		if ev.candidates > 0 {
			cand := ev.candidate
			for _, p := range cand.parts {
				switch {
				case p.hasCall:
					args := string(p.call.args)
					if args == "" || args == "null" {
						args = "{}"
					}
					out.ToolCalls = append(out.ToolCalls, chat.ToolCallDelta{Index: s.calls, ID: "call_" + strconv.Itoa(s.calls),
						Name: p.call.name, Arguments: args})
					s.calls++
				case p.thought:
					out.Reasoning += p.text
				default:
					out.Content += p.text
				}
			}
			native = cand.finishReason
		} else if ev.hasFeedback && ev.blockReason != "" {
			native = ev.blockReason
		}
		if native != "" {
			s.finished = true
			s.sse.Close()
			out.FinishReason, out.NativeFinishReason = chat.Finish(native), native
			if s.calls > 0 && out.FinishReason == "stop" {
				out.FinishReason = "tool_calls"
			}
			if u := ev.usage; ev.hasUsage {
				out.Usage = &chat.Usage{PromptTokens: u.promptTokenCount, CompletionTokens: chat.SumTokens(u.candidatesTokenCount, u.thoughtsTokenCount),
					ReasoningTokens: u.thoughtsTokenCount, CachedTokens: u.cachedContentTokenCount}
			}
		}
		if !out.Empty() {
			return out, nil
		}
	}
}
