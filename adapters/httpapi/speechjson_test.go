package httpapi

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// speechBodies are the seeds of FuzzSpeechBody and the cases of TestParseSpeech: plain requests, which the fast
// path must decode, and everything it leaves to encoding/json.
var speechBodies = []struct {
	body string
	fast bool // parseSpeech decodes it
}{
	{`{"model":"tts","input":"Hello","voice":"alloy","response_format":"pcm"}`, true},
	{" \r\n\t{ \"model\" : \"m\" , \"input\" : \"hi\" , \"voice\" : \"v\" , \"speed\" : 1.25 } \n", true},
	{`{}`, true},
	{`{"model":null,"input":null,"voice":null,"response_format":null,"speed":null,"provider":null,"user":null,"session_id":null}`, true},
	{`{"model":"a","model":"b","voice":"x","voice":null,"speed":2,"speed":null}`, true},
	{`{"user":"u","session_id":"s","input":"a\"b\\c\/d\b\f\n\r\t"}`, true},
	{`{"input":"\u00e9\u20AC\ud83d\ude00 \ud800 \udc00x \ud800\u0041 \u0000"}`, true},
	{"{\"input\":\"caf\xc3\xa9 \xff \xed\xa0\x80 \xef\xbf\xbd\"}", true},
	{"{\"input\":\"\xe2\x82\"}", true},
	{`{"speed":-0.5e+1}`, true},
	{`{"speed":0}`, true},
	{`{"speed":1E-400}`, true},
	{`{"stream":true,"extra":{"a":[1,-2.5e3,"x\u0041",null,false,{}],"b":{}},"list":[],"n":0}`, true},
	{`{"instructions":"speak slowly","model":"m"}`, true},
	// keys matched as encoding/json matches them (jsonenc.Is), and nesting up to its bound
	{`{"Model":"a"}`, true},
	{`{"MODEL":"a","model":"b"}`, true},
	{`{"SPEED":2}`, true},
	{`{"ſession_id":"s"}`, true},
	{`{"mode\u006c":"a"}`, true},
	{`{"extra":` + strings.Repeat(`[`, 100) + strings.Repeat(`]`, 100) + `}`, true},

	{``, false},
	{`   `, false},
	{`null`, false},
	{`[]`, false},
	{`"x"`, false},
	{`{`, false},
	{`{"model"`, false},
	{`{"model":`, false},
	{`{"model":"a"`, false},
	{`{"model":"a",}`, false},
	{`{"model":"a"}x`, false},
	{`{"model":"a"}{}`, false},
	{`{"model":"a" "input":"b"}`, false},
	{`{model:"a"}`, false},
	{`{"model":'a'}`, false},
	{`{"model":5}`, false},
	{`{"model":true}`, false},
	{`{"model":["a"]}`, false},
	{`{"input":{"text":"a"}}`, false},
	{`{"speed":"1"}`, false},
	{`{"speed":1e999}`, false},
	{`{"speed":-}`, false},
	{`{"speed":01}`, false},
	{`{"speed":.5}`, false},
	{`{"speed":1.}`, false},
	{`{"speed":1e}`, false},
	{`{"speed":+1}`, false},
	{`{"speed":NaN}`, false},
	{`{"voice":{"id":"voice_1"}}`, false},
	{`{"voice":{"id":""}}`, false},
	{`{"provider":{"options":{"openai":{"x":1}}}}`, false},
	{`{"provider":{"options":null}}`, false},
	{`{"provider":[]}`, false},
	{`{"input":"a` + "\x01" + `"}`, false},
	{`{"input":"\x"}`, false},
	{`{"input":"\u12"}`, false},
	{`{"input":"\u12G4"}`, false},
	{`{"input":"a\`, false},
	{`{"extra":[1,2}`, false},
	{`{"extra":{"a" 1}}`, false},
	{`{"extra":{1:2}}`, false},
	{`{"extra":tru}`, false},
	{`{"extra":nul}`, false},
	{`{"extra":` + strings.Repeat(`[`, 20000) + strings.Repeat(`]`, 20000) + `}`, false},
	{"\xef\xbb\xbf{}", false},
}

// TestParseSpeech: parseSpeech decodes the plain requests, declines the rest, and bindSpeech answers every body
// exactly as bindJSON does: the same request, or the same error.
func TestParseSpeech(t *testing.T) {
	for _, tc := range speechBodies {
		t.Run(fmt.Sprintf("%.40q", tc.body), func(t *testing.T) {
			var fast speechReq
			if got := parseSpeech([]byte(tc.body), &fast); got != tc.fast {
				t.Fatalf("parseSpeech = %v, want %v", got, tc.fast)
			}
			sameAsEncodingJSON(t, []byte(tc.body))
		})
	}
}

// TestParseSpeechAllocations: a plain request costs one copy of its body, one block of strings and its speed,
// where encoding/json took 13 allocations.
func TestParseSpeechAllocations(t *testing.T) {
	body := []byte(`{"model":"tts","input":"Hello there","voice":"alloy","response_format":"mp3","speed":1.5,"user":"u","extra":{"a":[1,"b",{}]}}`)
	if n := testing.AllocsPerRun(100, func() {
		var r speechReq
		if !parseSpeech(body, &r) {
			t.Fatal("declined")
		}
	}); n > 3 {
		t.Fatalf("%v allocations, want at most 3", n)
	}
}

// FuzzSpeechBody: whatever the body, bindSpeech answers it exactly as encoding/json (bindJSON) does, and a body
// parseSpeech accepts decodes to what encoding/json makes of it.
func FuzzSpeechBody(f *testing.F) {
	for _, tc := range speechBodies {
		f.Add([]byte(tc.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		sameAsEncodingJSON(t, body)
	})
}

func sameAsEncodingJSON(t *testing.T, body []byte) {
	t.Helper()
	var want, got, fast speechReq
	wantErr := bindJSON(requestContext("", body), &want)
	gotErr := bindSpeech(requestContext("", body), &got)
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		t.Fatalf("body %q: bindSpeech error %v, encoding/json %v", body, gotErr, wantErr)
	}
	if wantErr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("body %q: bindSpeech decoded %s, encoding/json %s", body, show(got), show(want))
	}
	if parseSpeech(body, &fast) && (wantErr != nil || !reflect.DeepEqual(fast, want)) {
		t.Fatalf("body %q: parseSpeech accepted %s, encoding/json: %s, %v", body, show(fast), show(want), wantErr)
	}
}

// show prints a request's fields, not its pointers.
func show(r speechReq) string {
	s := func(p *string) string {
		if p == nil {
			return "nil"
		}
		return fmt.Sprintf("%q", *p)
	}
	speed := "nil"
	if r.Speed != nil {
		speed = fmt.Sprint(*r.Speed)
	}
	return fmt.Sprintf("{model %s input %s voice %s format %s speed %s provider %v user %s session %s}", s(r.Model),
		s(r.Input), s((*string)(r.Voice)), s(r.ResponseFormat), speed, r.Provider, s(r.User), s(r.SessionID))
}
