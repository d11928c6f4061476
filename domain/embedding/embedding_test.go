package embedding_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/domain/embedding"
)

func ptr[T any](v T) *T { return &v }

// TestValidate: a request breaking a rule is a 400 naming the field; a good one gets its defaults.
func TestValidate(t *testing.T) {
	text := func(s ...string) []embedding.Input {
		out := make([]embedding.Input, len(s))
		for i, v := range s {
			out[i].Text = v
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		req   embedding.Request
		field string // "" when valid
	}{
		{"one text", embedding.Request{Model: "m", Inputs: text("hi"), Single: true}, ""},
		{"texts", embedding.Request{Model: "m", Inputs: text("a", "b")}, ""},
		{"token arrays", embedding.Request{Model: "m", Inputs: []embedding.Input{{Tokens: []int64{0, embedding.MaxTokenID}}}}, ""},
		{"base64 and dimensions", embedding.Request{Model: "m", Inputs: text("a"), Format: embedding.Base64, Dimensions: ptr(int64(256))}, ""},
		{"no model", embedding.Request{Inputs: text("a")}, "model"},
		{"no input", embedding.Request{Model: "m"}, "input"},
		{"too many inputs", embedding.Request{Model: "m", Inputs: make([]embedding.Input, embedding.MaxInputs+1)}, "input"},
		{"an empty text of one", embedding.Request{Model: "m", Inputs: text(""), Single: true}, "input"},
		{"an empty text of a list", embedding.Request{Model: "m", Inputs: text("a", "")}, "input[1]"},
		{"a NUL", embedding.Request{Model: "m", Inputs: text("a\x00b")}, "input[0]"},
		{"invalid UTF-8", embedding.Request{Model: "m", Inputs: text("a\xffb")}, "input[0]"},
		{"an empty token array", embedding.Request{Model: "m", Inputs: []embedding.Input{{Tokens: []int64{}}}}, "input[0]"},
		{"a negative token", embedding.Request{Model: "m", Inputs: []embedding.Input{{Tokens: []int64{1, -1}}}, Single: true}, "input[1]"},
		{"a token past the bound", embedding.Request{Model: "m", Inputs: []embedding.Input{{Tokens: []int64{1}}, {Tokens: []int64{embedding.MaxTokenID + 1}}}}, "input[1][0]"},
		{"too many tokens", embedding.Request{Model: "m", Inputs: []embedding.Input{{Tokens: make([]int64, embedding.MaxTotalTokens)}, {Tokens: []int64{1}}}}, "input[1]"},
		{"unknown format", embedding.Request{Model: "m", Inputs: text("a"), Format: "int8"}, "encoding_format"},
		{"zero dimensions", embedding.Request{Model: "m", Inputs: text("a"), Dimensions: ptr(int64(0))}, "dimensions"},
		{"too many dimensions", embedding.Request{Model: "m", Inputs: text("a"), Dimensions: ptr(int64(embedding.MaxDimensions + 1))}, "dimensions"},
		{"long user", embedding.Request{Model: "m", Inputs: text("a"), User: strings.Repeat("u", domain.MaxCallerID+1)}, "user"},
		{"bad options", embedding.Request{Model: "m", Inputs: text("a"), Options: map[string]any{"x": "a\x00"}}, "provider.options.x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.req.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				if tc.req.Format == "" {
					t.Fatal("no default format")
				}
				return
			}
			var de *domain.Error
			if !errors.As(err, &de) || de.Kind != domain.KindInvalid || de.Meta["field"] != tc.field {
				t.Fatalf("Validate = %v, want a 400 naming %s", err, tc.field)
			}
		})
	}
}

// TestBill: a plausible count is billed as the upstream reports it, exact to the micro-dollar; none or an
// implausible one at the gateway's estimate, never past the reservation.
func TestBill(t *testing.T) {
	price := domain.Micros(20_000) // $0.02 per million tokens
	p := catalog.Pricing{PerMillionPromptTokens: &price}
	r := embedding.Request{Inputs: []embedding.Input{{Text: strings.Repeat("a", 4000)}, {Tokens: []int64{1, 2, 3}}}}
	for _, tc := range []struct {
		name     string
		reported *int64
		want     embedding.Bill
	}{
		{"reported", ptr(int64(1003)), embedding.Bill{Tokens: 1003, Cost: 20}},
		{"none", nil, embedding.Bill{Tokens: 1003, Cost: 20, Estimated: true}},
		{"at the bound", ptr(int64(2*4003 + 4096)), embedding.Bill{Tokens: 12102, Cost: 242}},
		{"past the bound", ptr(int64(2*4003 + 4097)), embedding.Bill{Tokens: 1003, Cost: 20, Estimated: true, Implausible: true}},
		{"zero", ptr(int64(0)), embedding.Bill{Tokens: 1003, Cost: 20, Estimated: true, Implausible: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := r.Bill(p, tc.reported); got != tc.want {
				t.Fatalf("Bill = %+v, want %+v", got, tc.want)
			}
		})
	}
	if got := r.Estimate(p); got != 80 { // 4003 tokens at most
		t.Fatalf("Estimate = %d, want 80", got)
	}
}

// TestTexts: the guardrails see the texts alone, and their redaction goes back in place; token arrays stay.
func TestTexts(t *testing.T) {
	r := embedding.Request{Inputs: []embedding.Input{{Text: "a"}, {Tokens: []int64{7, 8}}, {Text: "b"}}}
	if got := r.Texts(); strings.Join(got, ",") != "a,b" {
		t.Fatalf("Texts = %q", got)
	}
	w := r.WithTexts([]string{"A", "B"})
	var kept []string
	for _, in := range w.Inputs {
		kept = append(kept, in.String())
	}
	if got := strings.Join(kept, " "); got != "A [7,8] B" {
		t.Fatalf("WithTexts = %q", got)
	}
	if r.Inputs[0].Text != "a" {
		t.Fatal("WithTexts changed the request it was called on")
	}
}
