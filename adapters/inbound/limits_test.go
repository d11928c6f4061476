package inbound

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/domain"
)

func items(n int, item string) string { return strings.TrimSuffix(strings.Repeat(item+",", n), ",") }

// refuse names the list refused and how, for the tests to read back.
func refuse(path string, total bool) error {
	return domain.Invalid(path, fmt.Sprintf("past (total %v)", total))
}

// testLimits are limits of the shapes a wire format has: a list of objects with lists in them, bounded one by one
// and together, a top-level list, and a free-form value.
var testLimits = NewLimits(5, map[string]Limit{
	"list":           {Items: 3, Refuse: refuse},
	"list[].parts":   {Items: 2, Total: 3, Refuse: refuse},
	"list[].x.y":     {Items: 1, Refuse: refuse},
	"top":            {Items: 2, Refuse: refuse},
	"free":           {Free: true},
	"deep.free.list": {Items: 1, Refuse: refuse},
})

func TestLimits(t *testing.T) {
	for _, tt := range []struct {
		in    string
		field string // of the refusal, "" for none
		total bool
	}{
		{`{"list":[{},{},{}],"top":[1,2],"free":{"a":[1,2]}}`, "", false},
		{`{"list":[{},{},{},{}]}`, "list", false},
		{`{"list":[{"parts":[1,2]},{"parts":[1]}]}`, "", false},
		{`{"list":[{"parts":[1,2,3]}]}`, "list[0].parts", false},
		{`{"list":[{"parts":[1,2]},{"parts":[1,2]}]}`, "list[1].parts", true},
		{`{"list":[{"parts":[1]},{"parts":[1],"parts":[1],"parts":[1]}]}`, "list[1].parts", true}, // given thrice, counted thrice
		{`{"list":[{"PARTS":[1,2,3]}]}`, "list[0].PARTS", false},                                  // as encoding/json matches a struct's field
		{"{\"list\":[{\"part\u017f\":[1,2,3]}]}", "list[0].part\u017f", false},
		{`{"list":[{"x":{"y":[1,2]}}]}`, "list[0].x.y", false},
		{`{"list":[{"x":[{"y":[1,2]}]}]}`, "", false}, // y below a list of x is another path
		{`{"LIST":[{},{},{},{}]}`, "", false},         // the body's own members by their exact keys
		{`{"\u006cist":[{},{},{},{}]}`, "list", false},
		{`{"top":"not a list"}`, "", false},
		{`{"top":[1,2,3]}`, "top", false},
		{`{"a":1,"b":2,"c":3,"d":4,"e":5}`, "", false},
		{`{"a":1,"b":2,"c":3,"d":4,"e":5,"a":6}`, "body", false},
		{`{"free":[` + items(1001, `0`) + `]}`, "free", false},
		{`{"free":{"a":{"b":[` + items(1001, `0`) + `]}}}`, "free.a.b", false},
		{`{"free":[` + items(200, `[`+items(100, `0`)+`]`) + `]}`, "free", false}, // past domain.MaxValues
		{`{"deep":{"free":{"list":[1,2]}}}`, "deep.free.list", false},
		{`{"list":[{},{},{},{},x]}`, "list", false},           // refused before the bad byte is read
		{`{"list":[x,{},{},{},{}]}`, "", false},               // not JSON: the decoder's to say
		{"{\"free\":{\"a\xff\":\"\\ud800\xff\"}}", "", false}, // a wire format's free value: its text is the format's to judge
		{`[1,2]`, "", false},
		{``, "", false},
	} {
		err := testLimits.Check([]byte(tt.in))
		var de *domain.Error
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("%.60s: %v", tt.in, err)
		case tt.field != "" && (!errors.As(err, &de) || de.Meta["field"] != tt.field):
			t.Errorf("%.60s: %v, want a refusal of %s", tt.in, err, tt.field)
		case tt.field != "" && tt.field != "body" && !strings.HasPrefix(tt.field, "free") && !strings.Contains(de.Msg, fmt.Sprint(tt.total)):
			t.Errorf("%.60s: %v, want total %v", tt.in, err, tt.total)
		}
	}
}

// TestCheckFree holds a value decoded whole to domain.MaxListEntries in each list and object (a key given twice
// counted twice) and domain.MaxValues in all, naming the list or object past the first, the value past the second.
func TestCheckFree(t *testing.T) {
	for _, tt := range []struct {
		field, in string
		want      string // the refusal's field, "" for none
	}{
		{"", `[` + items(domain.MaxListEntries, `{}`) + `]`, ""},
		{"", `[` + items(domain.MaxListEntries+1, `{}`) + `]`, "body"},
		{"", `{"a":{"b":[1,[` + items(domain.MaxListEntries+1, `null`) + `]]}}`, "a.b[1]"},
		{"x", `{"a":{"b":[1,[` + items(domain.MaxListEntries+1, `null`) + `]]}}`, "x.a.b[1]"},
		{"x", `[[` + items(domain.MaxListEntries+1, `null`) + `]]`, "x[0]"},
		{"", `{` + items(domain.MaxListEntries+1, `"a":1`) + `}`, "body"},
		{"", `{"a\u0000b":{"c":[` + items(domain.MaxListEntries+1, `""`) + `]}}`, "a\x00b.c"},
		{"", `[` + items(140, `[`+items(140, `1`)+`]`) + `]`, ""},     // 19,740 values
		{"", `[` + items(141, `[`+items(141, `1`)+`]`) + `]`, "body"}, // 20,022
		{"provider", `[` + items(141, `[`+items(141, `1`)+`]`) + `]`, "provider"},
		{"", `[x,` + items(domain.MaxListEntries+1, `{}`) + `]`, ""}, // not JSON: the decoder's to say
		{"", `"x"`, ""},
	} {
		err := CheckFree(tt.field, []byte(tt.in))
		var de *domain.Error
		if tt.want == "" && err != nil || tt.want != "" && (!errors.As(err, &de) || de.Meta["field"] != tt.want) {
			t.Errorf("%q %.60s: %v, want a refusal of %q", tt.field, tt.in, err, tt.want)
		}
	}
}

// TestCheckFreeText: CheckFree refuses a string or an object key that does not spell its text exactly (invalid
// UTF-8, an escaped half of a surrogate pair), which encoding/json would decode into U+FFFD, naming it as the
// other refusals do; a key by its object and "(a key)".
func TestCheckFreeText(t *testing.T) {
	for _, tt := range []struct {
		field, in string
		want      string // the refusal's message, "" for none
	}{
		{"", `{"name":"caf\u00e9 \ud83d\ude00 \ufffd \\ud800","n":1}`, ""},
		{"", "{\"name\":\"caf\xc3\xa9 \xef\xbf\xbd\"}", ""},
		{"", `{"name":"a\u0000"}`, ""}, // NUL is the domain's to refuse
		{"", "{\"name\":\"a\xffb\"}", "name: must be valid UTF-8"},
		{"", "{\"name\":\"\xed\xa0\x80\"}", "name: must be valid UTF-8"},
		{"", `{"name":"a\ud800b"}`, "name: must be valid UTF-8"},
		{"", `{"name":"\udc00"}`, "name: must be valid UTF-8"},
		{"", `{"name":"\ud800\u0041"}`, "name: must be valid UTF-8"},
		{"", `{"ok":"x","list":["a",{"b":[1,"\udfff"]}]}`, "list[1].b[1]: must be valid UTF-8"},
		{"", "{\"x\xff\":1}", "(a key): must be valid UTF-8"},
		{"", `{"\ud800":1}`, "(a key): must be valid UTF-8"},
		{"", `{"config":{"a":{"\udc00x":"v"}}}`, "config.a.(a key): must be valid UTF-8"},
		{"", `{"config":[{},{"\ud800":null}]}`, "config[1].(a key): must be valid UTF-8"},
		{"", `{"a":"\ud800","b":[` + items(domain.MaxListEntries+1, `1`) + `]}`, "a: must be valid UTF-8"},            // the first refusal in the body
		{"", `{"b":[` + items(domain.MaxListEntries+1, `1`) + `],"a":"\ud800"}`, "b: must have at most 1000 entries"}, // the same
		{"", "\"\xff\"", "body: must be valid UTF-8"},
		{"", "[\"\xff\"]", "[0]: must be valid UTF-8"},
		{"options", `{"a":"\ud800"}`, "options.a: must be valid UTF-8"},
		{"options", `{"\ud800":1}`, "options.(a key): must be valid UTF-8"},
		{"", "{\"name\":\"\xff\"", "name: must be valid UTF-8"}, // refused before the missing brace is read
		{"", "{\"name\" \"\xff\"}", ""},                         // not JSON: the decoder's to say
	} {
		err := CheckFree(tt.field, []byte(tt.in))
		var de *domain.Error
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%q %q: %v", tt.field, tt.in, err)
		case tt.want != "" && (!errors.As(err, &de) || de.Msg != tt.want || !strings.HasPrefix(tt.want, fmt.Sprint(de.Meta["field"])+": ")):
			t.Errorf("%q %q: %v, want a refusal of %q", tt.field, tt.in, err, tt.want)
		}
	}
}

// TestLimitsAllocations: a body within the limits is counted without allocating (but for a key with escapes, which
// the scanner undoes into a copy).
func TestLimitsAllocations(t *testing.T) {
	b := []byte(`{"list":[{"parts":[1]},{"x":{"y":[true]}}],"top":["a"],"free":{"a":[{},[],"x",1,null,{"b":[true]}]},"other":{"d":[[[]]]}}`)
	if n := testing.AllocsPerRun(100, func() { _ = testLimits.Check(b) }); n != 0 {
		t.Errorf("Check: %v allocations", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = CheckFree("", b) }); n != 0 {
		t.Errorf("CheckFree: %v allocations", n)
	}
}

// BenchmarkLimits times the pass that counts a body's lists against what encoding/json offers to read a body
// without decoding it whole, Decoder.Token: a typical chat body, and one of 1,000 messages.
func BenchmarkLimits(b *testing.B) {
	limits := NewLimits(1000, map[string]Limit{"messages": {Items: 10_000, Refuse: refuse},
		"messages[].content": {Items: 1000, Total: 10_000, Refuse: refuse}, "provider": {Free: true}})
	typical := `{"model":"openai/gpt-4o-mini","stream":true,"temperature":0.7,"max_tokens":256,"messages":[` +
		`{"role":"system","content":"You are a helpful assistant. Answer briefly."},` +
		`{"role":"user","content":"What is the capital of France, and what is it known for?"}]}`
	long := `{"model":"m","messages":[` + items(1000, `{"role":"user","content":[{"type":"text","text":"`+strings.Repeat("x", 200)+`"}]}`) + `]}`
	for _, bc := range []struct{ name, body string }{{"typical", typical}, {"1000 messages", long}} {
		raw := []byte(bc.body)
		b.Run("pass/"+bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if err := limits.Check(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("token/"+bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				dec := json.NewDecoder(bytes.NewReader(raw))
				for {
					if _, err := dec.Token(); err == io.EOF {
						break
					} else if err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkCheckFree times the pass every body decoded whole goes through first (a speech request's on every
// speech call): a plain speech request, and a management body of 1,000 escaped strings.
func BenchmarkCheckFree(b *testing.B) {
	for _, bc := range []struct{ name, body string }{
		{"speech", `{"model":"tts","input":"Hello there, this is a sentence to speak aloud, with a few more words in it.","voice":"alloy","response_format":"mp3","speed":1.5,"user":"u","extra":{"a":[1,"b",{}]}}`},
		{"1000 escaped strings", `{"ids":[` + items(1000, `"caf\u00e9 \ud83d\ude00 \"quoted\" `+strings.Repeat("é", 20)+`"`) + `]}`},
	} {
		raw := []byte(bc.body)
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if err := CheckFree("", raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
