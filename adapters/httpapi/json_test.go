package httpapi

import (
	"errors"
	"testing"

	"github.com/switchboard-ai/switchboard/domain"
)

// TestBindJSONText: a body decoded whole is refused, naming the field, when a string or an object key is not valid
// UTF-8 or escapes half of a surrogate pair, which encoding/json would decode into U+FFFD where no later check could
// see it: management bodies (bindFields), and speech and video bodies. Text that is intact decodes as written.
func TestBindJSONText(t *testing.T) {
	for _, tt := range []struct {
		name string
		dst  func() any
		body string
		want string // the refusal's message, "" when the body passes
	}{
		{"raw 0xFF", func() any { return new(createKeyReq) }, "{\"name\":\"a\xffb\"}", "name: must be valid UTF-8"},
		{"lone high half", func() any { return new(createKeyReq) }, `{"name":"a\ud800b"}`, "name: must be valid UTF-8"},
		{"lone low half", func() any { return new(createKeyReq) }, `{"name":"k","external":{"user":"\udc00"}}`, "external.user: must be valid UTF-8"},
		{"surrogate as UTF-8", func() any { return new(createKeyReq) }, "{\"name\":\"k\",\"external\":{\"user\":\"\xed\xa0\x80\"}}", "external.user: must be valid UTF-8"},
		{"a field no one reads", func() any { return new(createKeyReq) }, "{\"name\":\"k\",\"extra\":[\"\xff\"]}", "extra[0]: must be valid UTF-8"},
		{"a key", func() any { return new(createKeyReq) }, "{\"name\":\"k\",\"x\xff\":1}", "(a key): must be valid UTF-8"},
		{"a key of a map", func() any { return new(map[string]any) }, `{"config":{"\ud800":1}}`, "config.(a key): must be valid UTF-8"},
		{"a list of ids", func() any { return new(bulkReq) }, `{"member_user_ids":["a","\udfff"]}`, "member_user_ids[1]: must be valid UTF-8"},
		{"an option", func() any { return new(updatePresetReq) }, `{"description":"\ud83d"}`, "description: must be valid UTF-8"},
		{"speech input", func() any { return new(speechReq) }, "{\"model\":\"m\",\"input\":\"hi \xff\",\"voice\":\"v\"}", "input: must be valid UTF-8"},
		{"speech provider options", func() any { return new(speechReq) }, `{"provider":{"options":{"x":{"\ud800":1}}}}`, "provider.options.x.(a key): must be valid UTF-8"},
		{"video prompt", func() any { return new(videoReq) }, `{"model":"m","prompt":"a\ud800"}`, "prompt: must be valid UTF-8"},
		{"intact", func() any { return new(createKeyReq) }, "{\"name\":\"caf\xc3\xa9 \\ud83d\\ude00 \\ufffd \xef\xbf\xbd \\\\ud800\"}", ""},
	} {
		err := bindJSON(requestContext("", []byte(tt.body)), tt.dst())
		var de *domain.Error
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (!errors.As(err, &de) || de.Kind != domain.KindInvalid || de.Msg != tt.want):
			t.Errorf("%s: %v, want a 400 %q", tt.name, err, tt.want)
		}
	}
	var req createKeyReq
	if err := bindFields(requestContext("", []byte(`{"name":"\ud83d\ude00 \ufffd \\ud800"}`)), &req); err != nil || *req.Name != "😀 \uFFFD \\ud800" {
		t.Errorf("intact text: %v, decoded %q", err, deref(req.Name))
	}
}
