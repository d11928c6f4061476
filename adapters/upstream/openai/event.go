package openai

import (
	"bytes"

	"github.com/switchboard-ai/switchboard/adapters/internal/jsonenc"
	"github.com/switchboard-ai/switchboard/domain/chat"
)

// event is what the gateway reads of one chat.completion.chunk event: the first choice's delta and finish reason,
// the usage, and whether it is an error object instead.
type event struct {
	chat.Chunk
	// finish is the first choice's finish_reason as sent; failed reports an error object.
	finish string
	failed bool
	// reasoning and reasoningContent are the delta's two names for its reasoning, joined in Reasoning.
	reasoning, reasoningContent string
}

// decoder reads the events of one stream, each in a single pass over its bytes, keeping only what event holds:
// one event a token, so a reflective decoder (goccy/go-json before) was most of the gateway's CPU and
// allocations per token (pprof), copying the event and allocating the chunk, its choices and their deltas every
// time. It accepts what encoding/json would decode into those fields, and reads it as encoding/json does: keys
// matched without regard to case, unknown members skipped (and checked to be JSON), a value of the wrong type an
// error (an error object's message that is not a string among them); a null leaves a string or a number as it
// was and clears a list or an object that encoding/json holds by pointer, and a key given twice reads into what
// the first one set (a list's items into its items).
//
// An upstream begins every event of a stream with the same members, which the gateway does not read (OpenAI's
// id, object, created and model: half of what an event of one token holds). head is the run of such members
// that began the last event read whole, up to and with the comma before its first member read: an event that
// begins with the same bytes is read from there, as reading them again would leave it where it is then.
type decoder struct{ head []byte }

func (d *decoder) decode(data []byte) (ev event, err error) {
	s := jsonenc.NewScanner(data)
	var usage *chat.Usage // allocated once an event has one: most have none
	// read reads the member of key when the gateway reads it, and reports whether it did.
	read := func(key []byte) (bool, error) {
		switch {
		case jsonenc.Is(key, "choices"):
			n := 0
			err := s.Array(func(i int) error {
				n = i + 1
				if i == 0 {
					return choice(&s, &ev)
				}
				var rest event
				return choice(&s, &rest)
			})
			if n == 0 { // null or []: no choices
				ev = event{failed: ev.failed}
			}
			return true, err
		case jsonenc.Is(key, "usage"):
			if s.Null() {
				usage = nil
				return true, nil
			}
			if usage == nil {
				usage = new(chat.Usage)
			}
			return true, readUsage(&s, usage)
		case jsonenc.Is(key, "error"):
			if s.Null() {
				ev.failed = false
				return true, nil
			}
			ev.failed = true
			return true, s.Object(func(key []byte) error {
				if jsonenc.Is(key, "message") {
					var message string
					return s.Str(&message)
				}
				return s.Skip()
			})
		}
		return false, nil
	}
	// skipped is where the members skipped from the event's start end, until a member is read (-1 then).
	skipped := 0
	member := func(key []byte) error {
		ok, err := read(key)
		switch {
		case !ok:
			err = s.Skip()
			if skipped >= 0 {
				skipped = s.Pos()
			}
		case skipped > 0: // the first member read: the head ends with the comma before it
			d.head = append(d.head, data[:skipped+bytes.IndexByte(data[skipped:], ',')+1]...)
			fallthrough
		default:
			skipped = -1
		}
		return err
	}
	if len(d.head) > 0 && bytes.HasPrefix(data, d.head) {
		s.Seek(len(d.head))
		skipped = -1
		if err = s.Members(member); err == nil && !s.End() {
			err = jsonenc.ErrSyntax
		}
	} else {
		d.head = d.head[:0]
		err = s.Document(member)
	}
	ev.Usage = usage
	ev.Reasoning = ev.reasoning + ev.reasoningContent
	return ev, err
}

func choice(s *jsonenc.Scanner, ev *event) error {
	if s.Null() {
		return nil
	}
	return s.Object(func(key []byte) error {
		switch {
		case jsonenc.Is(key, "delta"):
			return delta(s, ev)
		case jsonenc.Is(key, "finish_reason"):
			ev.finish = "" // held by pointer: null clears it
			return s.Str(&ev.finish)
		}
		return s.Skip()
	})
}

// delta reads a choice's delta.
func delta(s *jsonenc.Scanner, ev *event) error {
	if s.Null() {
		return nil
	}
	return s.Object(func(key []byte) error {
		switch {
		case jsonenc.Is(key, "content"):
			return s.Str(&ev.Content)
		case jsonenc.Is(key, "reasoning"):
			return s.Str(&ev.reasoning)
		case jsonenc.Is(key, "reasoning_content"):
			return s.Str(&ev.reasoningContent)
		case jsonenc.Is(key, "tool_calls"):
			// As encoding/json fills a slice: each item read into the one already there (what an earlier
			// tool_calls left within the slice's capacity), the rest cut.
			n := 0
			err := s.Array(func(i int) error {
				n = i + 1
				if i < cap(ev.ToolCalls) {
					ev.ToolCalls = ev.ToolCalls[:i+1]
				} else {
					ev.ToolCalls = append(ev.ToolCalls, chat.ToolCallDelta{})
				}
				return toolCall(s, &ev.ToolCalls[i])
			})
			ev.ToolCalls = ev.ToolCalls[:n]
			if n == 0 {
				ev.ToolCalls = nil
			}
			return err
		}
		return s.Skip()
	})
}

func toolCall(s *jsonenc.Scanner, tc *chat.ToolCallDelta) error {
	if s.Null() {
		return nil
	}
	return s.Object(func(key []byte) error {
		switch {
		case jsonenc.Is(key, "index"):
			n := int64(tc.Index)
			err := s.Int(&n)
			tc.Index = int(n)
			return err
		case jsonenc.Is(key, "id"):
			return s.Str(&tc.ID)
		case jsonenc.Is(key, "function"):
			return readFunction(s, &tc.Name, &tc.Arguments)
		}
		return s.Skip()
	})
}

// readFunction reads a tool call's function, {name, arguments}, into name and arguments: null, for it or a member,
// leaves them as they were, as encoding/json does.
func readFunction(s *jsonenc.Scanner, name, arguments *string) error {
	if s.Null() {
		return nil
	}
	return s.Object(func(key []byte) error {
		switch {
		case jsonenc.Is(key, "name"):
			return s.Str(name)
		case jsonenc.Is(key, "arguments"):
			return s.Str(arguments)
		}
		return s.Skip()
	})
}

func readUsage(s *jsonenc.Scanner, u *chat.Usage) error {
	// count reads a details object's one count; the object is held by pointer: null clears it.
	count := func(name string, n *int64) error {
		if s.Null() {
			*n = 0
			return nil
		}
		return s.Object(func(key []byte) error {
			if !jsonenc.Is(key, name) {
				return s.Skip()
			}
			return s.Int(n)
		})
	}
	return s.Object(func(key []byte) error {
		switch {
		case jsonenc.Is(key, "prompt_tokens"):
			return s.Int(&u.PromptTokens)
		case jsonenc.Is(key, "completion_tokens"):
			return s.Int(&u.CompletionTokens)
		case jsonenc.Is(key, "prompt_tokens_details"):
			return count("cached_tokens", &u.CachedTokens)
		case jsonenc.Is(key, "completion_tokens_details"):
			return count("reasoning_tokens", &u.ReasoningTokens)
		}
		return s.Skip()
	})
}
