package espeak_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os/exec"
	"testing"

	"github.com/switchboard-ai/switchboard/adapters/upstream/espeak"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/speech"
	"github.com/switchboard-ai/switchboard/ports"
	"github.com/switchboard-ai/switchboard/test/fakes"
	"github.com/switchboard-ai/switchboard/test/short"
)

// engine needs espeak-ng: `make test` installs it (with lame) where apt can; the tests say so plainly otherwise.
func engine(t *testing.T) *espeak.Engine {
	t.Helper()
	short.Skip(t, "espeak-ng")
	e := espeak.New()
	if err := e.Check(); err != nil {
		t.Fatal("espeak-ng is not installed: run `make test` (it installs espeak-ng and lame) or `apt-get install espeak-ng lame`")
	}
	return e
}

func TestSpeech(t *testing.T) {
	t.Parallel()
	e := engine(t)
	pcm, _ := fakes.ReadAudio(t, e, fakes.SpeechRequest("", "en", "Hello from the gateway.", speech.PCM, nil))
	if len(pcm) < 24000 || len(pcm)%2 != 0 {
		t.Fatalf("%d bytes of PCM for a sentence", len(pcm))
	}
	if bytes.Count(pcm, []byte{0, 0}) > len(pcm)/4 {
		t.Fatal("the audio is mostly silence")
	}
	if _, err := exec.LookPath("lame"); err == nil {
		mp3, _ := fakes.ReadAudio(t, e, fakes.SpeechRequest("", "en-us", "Hello.", speech.MP3, nil))
		if len(mp3) < 100 || mp3[0] != 0xFF && string(mp3[:3]) != "ID3" {
			t.Fatalf("not an mp3: % x", mp3[:min(4, len(mp3))])
		}
	}
}

func TestUnknownVoice(t *testing.T) {
	t.Parallel()
	_, err := engine(t).Synthesize(context.Background(), fakes.SpeechRequest("", "alloy", "x", speech.PCM, nil))
	var ue *ports.UpstreamError
	if !errors.As(err, &ue) || ue.Kind != domain.KindInvalid {
		t.Fatalf("err = %v, want an invalid voice", err)
	}
}

// TestCancel stops the process when the caller goes away: reading on says so with the context's error, never as a
// failure of the engine (killed, it exits unclean).
func TestCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	a, err := engine(t).Synthesize(ctx, fakes.SpeechRequest("", "en", string(bytes.Repeat([]byte("A long text. "), 2000)), speech.PCM, nil))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	if _, err := io.ReadFull(a.Body, buf); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := io.Copy(io.Discard, a.Body); !errors.Is(err, context.Canceled) {
		t.Fatalf("read after the caller left: %v, want context.Canceled", err)
	}
	if err := a.Body.Close(); err != nil {
		t.Fatal(err)
	}
}
