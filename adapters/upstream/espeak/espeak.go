// Package espeak synthesises speech on the gateway's own host with the espeak-ng program (and mp3 through lame):
// real audio with no account anywhere, for a first run and for end-to-end tests.
package espeak

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"

	"github.com/switchboard-ai/switchboard/adapters/upstream"
	"github.com/switchboard-ai/switchboard/adapters/upstream/audio"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/speech"
	"github.com/switchboard-ai/switchboard/ports"
)

// Engine runs espeak-ng. Without the program it answers every call with a clear error, so a configuration that
// names it still starts.
type Engine struct {
	bin, lame string
	voices    map[string]bool
}

var _ ports.SpeechProvider = (*Engine)(nil)

// Installed reports whether espeak-ng is on PATH.
func Installed() bool {
	_, err := exec.LookPath("espeak-ng")
	return err == nil
}

// New finds espeak-ng and lame on PATH and reads the installed voices.
func New() *Engine {
	e := &Engine{voices: map[string]bool{}}
	e.bin, _ = exec.LookPath("espeak-ng")
	e.lame, _ = exec.LookPath("lame")
	if e.bin == "" {
		return e
	}
	out, err := exec.Command(e.bin, "--voices").Output()
	if err != nil {
		return e
	}
	for _, line := range strings.Split(string(out), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) >= 5 {
			e.voices[f[1]] = true // language: en, en-us, ...
			e.voices[f[4]] = true // file: gmw/en-US, ...
			e.voices[f[4][strings.LastIndex(f[4], "/")+1:]] = true
		}
	}
	return e
}

var errNotInstalled = unavailable("espeak-ng is not installed on the gateway's host")

// Check reports, at start, whether espeak-ng was found.
func (e *Engine) Check() error {
	if e.bin == "" {
		return errNotInstalled
	}
	return nil
}

func unavailable(reason string) error {
	return &ports.UpstreamError{Kind: domain.KindUpstream, Retryable: true, Reason: reason}
}

// Synthesize runs espeak-ng (22,050 Hz WAV on stdout, resampled to 24 kHz), and lame for mp3. The voice must be
// an installed espeak-ng voice, optionally with a variant ("en-us+f3"); speed scales the 175 words a minute.
func (e *Engine) Synthesize(ctx context.Context, r ports.SynthesisRequest) (ports.Audio, error) {
	if e.bin == "" {
		return ports.Audio{}, errNotInstalled
	}
	if r.Format == speech.MP3 && e.lame == "" {
		return ports.Audio{}, upstream.Unfit("response_format: mp3 from espeak needs lame, which is not installed; ask for pcm")
	}
	base, _, _ := strings.Cut(r.Voice, "+")
	if !e.voices[base] {
		return ports.Audio{}, upstream.Unfit(fmt.Sprintf("voice: espeak-ng has no voice %q (try en, en-us, de, fr, ...)", r.Voice))
	}
	wpm := 175.0
	if r.Speed != nil {
		wpm *= *r.Speed
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &pipeline{ctx: ctx, cancel: cancel}
	speak := exec.CommandContext(ctx, e.bin, "--stdout", "-b", "1", "-v", r.Voice, "-s", strconv.Itoa(int(min(max(wpm, 80), 500))))
	speak.Stdin = strings.NewReader(r.Input)
	wav, err := p.start(speak)
	if err != nil {
		cancel()
		return ports.Audio{}, unavailable("espeak-ng could not start")
	}
	pcm, err := audio.FromWAV(wav)
	if err != nil {
		p.Close()
		return ports.Audio{}, unavailable("espeak-ng produced no audio: " + p.stderrOf(0))
	}
	out := pcm
	if r.Format == speech.MP3 {
		enc := exec.CommandContext(ctx, e.lame, "--quiet", "-r", "-s", "24", "--bitwidth", "16", "--signed",
			"--little-endian", "-m", "m", "-b", "128", "-", "-")
		enc.Stdin = pcm
		if out, err = p.start(enc); err != nil {
			p.Close()
			return ports.Audio{}, unavailable("lame could not start")
		}
	}
	p.out = out
	return ports.Audio{Body: p, Status: 200}, nil
}

// pipeline is the running processes; reading it reads the last one's output, and an unclean exit surfaces as an
// error at the end of the stream rather than as a clip that looks whole. Processes killed because the call's
// context ended (the caller went away) are no failure of the engine: the read says so with the context's error.
type pipeline struct {
	ctx    context.Context
	cancel context.CancelFunc
	cmds   []*exec.Cmd
	stderr []*bytes.Buffer
	out    io.Reader
	once   sync.Once
}

func (p *pipeline) start(cmd *exec.Cmd) (io.Reader, error) {
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p.cmds, p.stderr = append(p.cmds, cmd), append(p.stderr, &stderr)
	return stdout, nil
}

func (p *pipeline) stderrOf(i int) string {
	return strings.TrimSpace(strings.SplitN(p.stderr[i].String(), "\n", 2)[0])
}

func (p *pipeline) Read(b []byte) (int, error) {
	n, err := p.out.Read(b)
	if err != nil && p.ctx.Err() != nil {
		return n, p.ctx.Err()
	}
	if err == io.EOF {
		for i, c := range p.cmds {
			if werr := c.Wait(); werr != nil {
				var exit *exec.ExitError
				if errors.As(werr, &exit) {
					return n, unavailable(fmt.Sprintf("%s failed: %s", c.Path, p.stderrOf(i)))
				}
			}
		}
		p.cmds = nil
	}
	return n, err
}

// Close stops the processes at once (a caller who went away) and reaps them.
func (p *pipeline) Close() error {
	p.once.Do(func() {
		p.cancel()
		for _, c := range p.cmds {
			_ = c.Wait()
		}
	})
	return nil
}
