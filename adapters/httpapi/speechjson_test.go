package httpapi

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
)

// speechBodies are the seeds of FuzzSpeechBody and the cases of TestBindSpeech: plain requests, keys matched as
// encoding/json matches them, escapes, and bodies it refuses.
var speechBodies = []string{
	`{"model":"tts","input":"Hello","voice":"alloy","response_format":"pcm"}`,
	" \r\n\t{ \"model\" : \"m\" , \"input\" : \"hi\" , \"voice\" : \"v\" , \"speed\" : 1.25 } \n",
	`{}`,
	`{"model":null,"input":null,"voice":null,"response_format":null,"speed":null,"provider":null,"user":null,"session_id":null}`,
	`{"model":"a","model":"b","voice":"x","voice":null,"speed":2,"speed":null}`,
	`{"user":"u","session_id":"s","input":"a\"b\\c\/d\b\f\n\r\t"}`,
	`{"input":"\u00e9\u20AC\ud83d\ude00 \ud800 \udc00x \ud800\u0041 \u0000"}`,
	"{\"input\":\"caf\xc3\xa9 \xff \xed\xa0\x80 \xef\xbf\xbd\"}",
	"{\"input\":\"\xe2\x82\"}",
	`{"speed":-0.5e+1}`,
	`{"speed":0}`,
	`{"speed":1E-400}`,
	`{"stream":true,"extra":{"a":[1,-2.5e3,"x\u0041",null,false,{}],"b":{}},"list":[],"n":0}`,
	`{"instructions":"speak slowly","model":"m"}`,
	// keys matched as encoding/json matches them, and nesting up to its bound
	`{"Model":"a"}`,
	`{"MODEL":"a","model":"b"}`,
	`{"SPEED":2}`,
	`{"ſession_id":"s"}`,
	`{"mode\u006c":"a"}`,
	`{"extra":` + strings.Repeat(`[`, 100) + strings.Repeat(`]`, 100) + `}`,

	``,
	`   `,
	`null`,
	`[]`,
	`"x"`,
	`{`,
	`{"model"`,
	`{"model":`,
	`{"model":"a"`,
	`{"model":"a",}`,
	`{"model":"a"}x`,
	`{"model":"a"}{}`,
	`{"model":"a" "input":"b"}`,
	`{model:"a"}`,
	`{"model":'a'}`,
	`{"model":5}`,
	`{"model":true}`,
	`{"model":["a"]}`,
	`{"input":{"text":"a"}}`,
	`{"speed":"1"}`,
	`{"speed":1e999}`,
	`{"speed":-}`,
	`{"speed":01}`,
	`{"speed":.5}`,
	`{"speed":1.}`,
	`{"speed":1e}`,
	`{"speed":+1}`,
	`{"speed":NaN}`,
	`{"voice":{"id":"voice_1"}}`,
	`{"voice":{"id":""}}`,
	`{"provider":{"options":{"openai":{"x":1}}}}`,
	`{"provider":{"options":null}}`,
	`{"provider":[]}`,
	`{"input":"a` + "\x01" + `"}`,
	`{"input":"\x"}`,
	`{"input":"\u12"}`,
	`{"input":"\u12G4"}`,
	`{"input":"a\`,
	`{"extra":[1,2}`,
	`{"extra":{"a" 1}}`,
	`{"extra":{1:2}}`,
	`{"extra":tru}`,
	`{"extra":nul}`,
	`{"extra":` + strings.Repeat(`[`, 20000) + strings.Repeat(`]`, 20000) + `}`,
	"\xef\xbb\xbf{}",
}

// TestBindSpeech: bindSpeech, which reads into a buffer kept for the next call, answers every body as bindJSON
// does (the same request, or the same error), and a request it made keeps its strings once the buffer is reused.
func TestBindSpeech(t *testing.T) {
	for _, body := range speechBodies {
		t.Run(fmt.Sprintf("%.40q", body), func(t *testing.T) {
			sameAsEncodingJSON(t, []byte(body))
		})
	}
}

// TestBindSpeechAllocations guards what decoding a plain speech request costs, on every speech call's way to its
// first byte: encoding/json's decoder, a pointer and a string for each field, the buffer coming from a pool. (The
// decoder written by hand on jsonenc.Scanner it replaced took 6 allocations and a fifth of the time:
// BenchmarkBindSpeech.)
func TestBindSpeechAllocations(t *testing.T) {
	body := []byte(`{"model":"tts","input":"Hello there","voice":"alloy","response_format":"mp3","speed":1.5,"user":"u","extra":{"a":[1,"b",{}]}}`)
	c := requestContext("", nil)
	if n := testing.AllocsPerRun(100, func() {
		c.Request.Body = io.NopCloser(bytes.NewReader(body))
		var r speechReq
		if err := bindSpeech(c, &r); err != nil {
			t.Fatal(err)
		}
	}); n > 26 {
		t.Fatalf("%v allocations, want at most 26", n)
	}
}

func BenchmarkBindSpeech(b *testing.B) {
	body := []byte(`{"model":"tts","input":"Hello there","voice":"alloy","response_format":"mp3","speed":1.5,"user":"u","extra":{"a":[1,"b",{}]}}`)
	c := requestContext("", nil)
	b.ReportAllocs()
	for b.Loop() {
		c.Request.Body = io.NopCloser(bytes.NewReader(body))
		var r speechReq
		if err := bindSpeech(c, &r); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzSpeechBody: whatever the body, bindSpeech answers it as bindJSON does, and what it decoded stays when its
// buffer is reused.
func FuzzSpeechBody(f *testing.F) {
	for _, body := range speechBodies {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		sameAsEncodingJSON(t, body)
	})
}

func sameAsEncodingJSON(t *testing.T, body []byte) {
	t.Helper()
	var want, got speechReq
	wantErr := bindJSON(requestContext("", body), &want)
	gotErr := bindSpeech(requestContext("", body), &got)
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		t.Fatalf("body %q: bindSpeech error %v, bindJSON %v", body, gotErr, wantErr)
	}
	if wantErr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("body %q: bindSpeech decoded %s, bindJSON %s", body, show(got), show(want))
	}
	// The buffer goes back to the pool, and is read into by the next call: the request keeps what it had.
	before := show(got)
	other := bytes.Repeat([]byte("x"), len(body))
	_ = bindSpeech(requestContext("", other), new(speechReq))
	if after := show(got); after != before {
		t.Fatalf("body %q: the request became %s once its buffer was reused, from %s", body, after, before)
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
