package responses

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/adapters/inbound"
)

// TestAside: an item kept aside gives the guardrails every string in it and the member names within it, at any
// depth, but the values of its own type, ids, status and encrypted content; an image_url counts as an image; a number past float64's range is read;
// what cannot be read is scanned whole.
func TestAside(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, item, text   string
		images, imageBytes int
	}{
		{"own members skipped at the top only", `{"type":"tool_search_call","id":"x","arguments":{"id":"Falcon","status":"Osprey"},"status":"completed"}`,
			"id|Falcon|status|Osprey", 0, 0},
		{"member names within", `{"type":"local_shell_call","action":{"env":{"Falcon":"1"}}}`, "env|Falcon|1", 0, 0},
		{"parts within", `{"type":"custom_tool_call_output","output":[{"type":"input_text","text":"ok","id":"Falcon"}]}`,
			"type|input_text|text|ok|id|Falcon", 0, 0},
		{"encrypted content", `{"type":"reasoning","summary":[{"type":"summary_text","text":"s"}],"encrypted_content":"gAAA"}`,
			"type|summary_text|text|s", 0, 0},
		{"images", `{"type":"computer_call_output","output":{"image_url":"data:image/png;base64,AAAA"},"more":[{"image_url":"https://x/i.png"}]}`,
			"image_url|image_url|https://x/i.png", 2, len("data:image/png;base64,AAAA")},
		{"text named image_url", `{"type":"tool_search_call","arguments":{"image_url":"Falcon"}}`, "image_url|Falcon", 1, 0},
		{"a file's data", `{"type":"custom_tool_call_output","output":[{"type":"input_file","file_data":"data:application/pdf;base64,JVBERi0x"}]}`,
			"type|input_file|file_data", 0, 0},
		{"a huge number", `{"type":"custom_tool_call_output","n":1e400,"output":"Falcon"}`, "Falcon", 0, 0},
		{"unreadable: whole", `{"type":"x","output":"Falcon"`, `{"type":"x","output":"Falcon"`, 0, 0},
	} {
		left := inbound.MaxCarried
		a, ok := aside(json.RawMessage(tt.item), &left)
		if want := strings.ReplaceAll(tt.text, "|", "\n"); !ok || a.Text != want || a.Images != tt.images || a.ImageBytes != tt.imageBytes {
			t.Errorf("%s: %q, %d images of %d bytes; want %q, %d of %d", tt.name, a.Text, a.Images, a.ImageBytes, want, tt.images, tt.imageBytes)
		}
	}
}

// TestAsideValues: the items aside hold at most inbound.MaxCarried values in all, as a message's parts are bounded:
// past them the input is a 400 naming the item, read no further.
func TestAsideValues(t *testing.T) {
	t.Parallel()
	item := func(n int) string {
		return `{"type":"shell_call_output","output":[` + strings.Repeat(`"",`, n-4) + `"end"]}`
	}
	if _, err := request(`{"model":"m","input":[{"role":"user","content":"hi"},` + item(inbound.MaxCarried/2) + `,` + item(inbound.MaxCarried/2) + `]}`); err == nil ||
		!strings.Contains(err.Error(), "input[2]: ") {
		t.Errorf("past the bound: %v, want a 400 naming input[2]", err)
	}
	r, err := request(`{"model":"m","input":[{"role":"user","content":"hi"},` + item(inbound.MaxCarried/2) + `]}`)
	if err != nil || len(r.Aside) != 1 || r.Aside[0].Text != "end" {
		t.Errorf("within the bound: %v %+v", err, r.Aside)
	}
}
