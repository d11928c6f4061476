package embeddings_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/adapters/inbound/embeddings"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/embedding"
	"github.com/switchboard-ai/switchboard/domain/routing"
)

// TestDecode: every shape of input OpenAI takes, and the fields the gateway reads.
func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		want embedding.Request
	}{
		{"a string", `{"model":"m","input":"hi"}`,
			embedding.Request{Model: "m", Inputs: []embedding.Input{{Text: "hi"}}, Single: true, Format: embedding.Float}},
		{"strings", `{"model":"m","input":["a","b"],"encoding_format":"base64"}`,
			embedding.Request{Model: "m", Inputs: []embedding.Input{{Text: "a"}, {Text: "b"}}, Format: embedding.Base64}},
		{"U+FFFD as a character, escaped, and a backslash", "{\"model\":\"m\",\"input\":[\"\uFFFD\",\"\\ufffd\",\"\\\\\\uFFFD\"]}",
			embedding.Request{Model: "m", Inputs: []embedding.Input{{Text: "\uFFFD"}, {Text: "\uFFFD"}, {Text: "\\\uFFFD"}}, Format: embedding.Float}},
		{"a token array", `{"model":"m","input":[1,2,3]}`,
			embedding.Request{Model: "m", Inputs: []embedding.Input{{Tokens: []int64{1, 2, 3}}}, Single: true, Format: embedding.Float}},
		{"token arrays", `{"model":"m","input":[[1],[2,3]],"dimensions":64,"user":"u","session_id":"s"}`,
			embedding.Request{Model: "m", Inputs: []embedding.Input{{Tokens: []int64{1}}, {Tokens: []int64{2, 3}}}, Format: embedding.Float,
				Dimensions: ptr(int64(64)), User: "u", SessionID: "s"}},
		{"provider", `{"model":"m","input":"x","provider":{"order":["a"],"options":{"a":{"task":"q"}}},"input_type":"query"}`,
			embedding.Request{Model: "m", Inputs: []embedding.Input{{Text: "x"}}, Single: true, Format: embedding.Float,
				Route: routing.Preferences{Order: []string{"a"}}, Options: map[string]any{"a": map[string]any{"task": "q"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := embeddings.Decode([]byte(tc.body))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Decode =\n%+v, want\n%+v", got, tc.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestDecodeRefuses: a body the gateway cannot take is a 400 naming the field, the lists counted before they are
// decoded.
func TestDecodeRefuses(t *testing.T) {
	many := func(item string, n int) string {
		return "[" + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + "]"
	}
	for _, tc := range []struct {
		name, body, field string
	}{
		{"no body", ``, ""},
		{"not an object", `[1]`, ""},
		{"no input", `{"model":"m"}`, "input"},
		{"null input", `{"model":"m","input":null}`, "input"},
		{"an empty list", `{"model":"m","input":[]}`, "input"},
		{"an object", `{"model":"m","input":{"text":"a"}}`, "input"},
		{"mixed kinds", `{"model":"m","input":["a",[1]]}`, "input[1]"},
		{"a float token", `{"model":"m","input":[1,2.5]}`, "input"},
		{"a float token in a list", `{"model":"m","input":[[1],[2.5]]}`, "input[1]"},
		{"a bad item", `{"model":"m","input":["a",null]}`, "input[1]"},
		{"a NUL", `{"model":"m","input":["a","b\u0000"]}`, "input[1]"},
		{"a null token", `{"model":"m","input":[1,null,3]}`, "input[1]"},
		{"a null token in a list", `{"model":"m","input":[[1],[2,null]]}`, "input[1][1]"},
		{"a list of one null", `{"model":"m","input":[null]}`, "input[0]"},
		{"invalid UTF-8", "{\"model\":\"m\",\"input\":\"a\xff\"}", "input"},
		{"a lone surrogate", `{"model":"m","input":"a\ud800b"}`, "input"},
		{"a lone surrogate after an escaped backslash", `{"model":"m","input":"\\ufffd\ud800"}`, "input"},
		{"invalid UTF-8 in a list", "{\"model\":\"m\",\"input\":[\"a\",\"\xfe\"]}", "input[1]"},
		{"too many inputs", `{"model":"m","input":` + many(`"a"`, embedding.MaxInputs+1) + `}`, "input"},
		{"too many tokens", `{"model":"m","input":` + many(many("1", 1000), embedding.MaxTotalTokens/1000+1) + `}`, "input[300]"},
		{"a model number", `{"model":5,"input":"a"}`, "model"},
		{"a string dimension", `{"model":"m","input":"a","dimensions":"64"}`, "dimensions"},
		{"a bad format", `{"model":"m","input":"a","encoding_format":"int8"}`, "encoding_format"},
		{"a bad provider", `{"model":"m","input":"a","provider":{"order":"x"}}`, "provider.order"},
		{"no model", `{"input":"a"}`, "model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := embeddings.Decode([]byte(tc.body))
			var de *domain.Error
			if !errors.As(err, &de) || de.Kind != domain.KindInvalid {
				t.Fatalf("Decode = %v, want a 400", err)
			}
			if tc.field != "" && de.Meta["field"] != tc.field {
				t.Fatalf("Decode = %v (field %v), want one naming %s", err, de.Meta["field"], tc.field)
			}
		})
	}
}

// BenchmarkDecode measures a typical retrieval batch: 64 texts of 500 bytes.
func BenchmarkDecode(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"model":"m","input":[`)
	for i := range 64 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, "%q", strings.Repeat("word ", 100))
	}
	sb.WriteString(`]}`)
	body := []byte(sb.String())
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := embeddings.Decode(body); err != nil {
			b.Fatal(err)
		}
	}
}
