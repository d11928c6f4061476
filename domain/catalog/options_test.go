package catalog_test

import (
	"reflect"
	"testing"

	"github.com/switchboard-ai/switchboard/domain/catalog"
)

func TestPassThrough(t *testing.T) {
	t.Parallel()
	options := map[string]any{
		"openai": map[string]any{"instructions": "calm", "callback_url": "x", "webhook": "x", "image": "https://evil/x.png",
			"nested": map[string]any{"url": "y", "keep": 1.0}},
		"elevenlabs": map[string]any{"seed": 1.0},
		"not-a-slug": "ignored",
	}
	got, err := catalog.PassThrough(options, "openai")
	want := map[string]any{"instructions": "calm", "nested": map[string]any{"keep": 1.0}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("PassThrough = %v, %v", got, err)
	}
	if got, _ := catalog.PassThrough(options, "deepgram"); got != nil {
		t.Fatalf("another slug's options were forwarded: %v", got)
	}
	if _, err := catalog.PassThrough(map[string]any{"openai": "x"}, "openai"); err == nil {
		t.Fatal("a non-object entry for the matched provider was accepted")
	}
}
