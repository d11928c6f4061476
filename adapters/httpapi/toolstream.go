package httpapi

import "github.com/switchboard-ai/switchboard/domain/chat"

// toolStream is how a translated stream (Messages, the Responses API) sends tool calls. Its format has each call's
// block (item) done before the next begins, where an upstream may interleave the deltas of parallel calls, or
// send text between a call's pieces: the first call streams as it comes, begun with its first arguments (its id
// and name, which may come in pieces, came before) and kept open to the end; the calls after it, and text after a
// call began, go whole after it. So arguments stream in the common case (one call, or calls one after another),
// and no delta goes to a block already done.
type toolStream struct {
	calls chat.Result // the calls gathered, numbered as it numbers them
	live  bool        // the first call began
}

// add gathers d and says what of it goes out now: the first call's beginning (begin, with its arguments so far), or
// the next piece of its arguments (more); neither when d is held for the end.
func (t *toolStream) add(d chat.ToolCallDelta) (begin *chat.ToolCall, more string) {
	if t.calls.AddToolCall(d) != 0 {
		return nil, ""
	}
	switch first := t.calls.ToolCalls[0]; {
	case t.live:
		return nil, d.Arguments
	case first.Name != "" && first.Arguments != "":
		t.live = true
		return &first, ""
	}
	return nil, ""
}

// began says a call began: text after it is held for the end.
func (t *toolStream) began() bool { return len(t.calls.ToolCalls) > 0 }

// held are the calls that go whole at the end: every call but the first, when it streamed.
func (t *toolStream) held() []chat.ToolCall {
	if t.live {
		return t.calls.ToolCalls[1:]
	}
	return t.calls.ToolCalls
}
