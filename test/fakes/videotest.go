package fakes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/video"
	"github.com/switchboard-ai/switchboard/ports"
)

// VideoErrors are one provider's own error answers, for the shared video failure contract.
type VideoErrors struct {
	// RateLimited is the provider's 429, headers included, and RetryAfter what the adapter must read from it.
	RateLimited Step
	RetryAfter  time.Duration
	// ServerError, Overloaded and BadInput are the provider's bodies for a 500, a 503 and a 400.
	ServerError, Overloaded, BadInput string
}

// VideoTarget is a job the provider knows, and one of its outputs, to poll and download.
type VideoTarget struct {
	UpstreamID string
	Output     video.Output
}

// CheckVideoFailures is the failure classification every video adapter keeps, on each of its three calls:
// rate limits, server errors, overload, timeouts (an answer that never comes) and refusals of the caller's
// input are UpstreamErrors of the right kind; a poll of a job the provider no longer has ends the job (not
// retryable); a download of a file the provider no longer has is video.ErrExpired, and of a range outside it
// video.ErrRangeNotValid.
// The provider is made by client to wait as long as each failure calls for.
func CheckVideoFailures[P ports.VideoProvider](t *testing.T, fake *Fake, client func(wait time.Duration) P, target VideoTarget, e VideoErrors) {
	t.Helper()
	ctx := context.Background()
	calls := map[string]func(p P) error{
		"submit": func(p P) error {
			_, err := p.Submit(ctx, ports.VideoSubmission{UpstreamModel: "m", Request: video.Request{Model: "m", Prompt: "a cat"}})
			return err
		},
		"poll": func(p P) error { _, err := p.Poll(ctx, target.UpstreamID); return err },
		"download": func(p P) error {
			c, err := p.Download(ctx, target.UpstreamID, target.Output, "")
			if err == nil {
				c.Body.Close()
			}
			return err
		},
	}
	type failure struct {
		name       string
		step       Step
		kind       domain.Kind
		retryable  bool
		retryAfter time.Duration
	}
	common := []failure{
		{"rate limited", e.RateLimited, domain.KindRateLimited, true, e.RetryAfter},
		{"server error", Step{Status: 500, Body: e.ServerError}, domain.KindUpstream, true, 0},
		{"overloaded", Step{Status: 503, Body: e.Overloaded}, domain.KindOverloaded, true, 0},
		{"gateway timeout", Step{Status: 504, Body: e.ServerError}, domain.KindTimeout, true, 0},
	}
	for _, op := range []string{"submit", "poll", "download"} {
		cases := append([]failure(nil), common...)
		switch op {
		case "submit":
			cases = append(cases, failure{"caller's input", Step{Status: 400, Body: e.BadInput}, domain.KindInvalid, false, 0},
				failure{"no answer in time", Step{Hold: make(chan struct{})}, domain.KindTimeout, true, 0})
		case "poll":
			cases = append(cases, failure{"job gone", Step{Status: 404, Body: e.BadInput}, domain.KindUpstream, false, 0})
		}
		for _, f := range cases {
			t.Run(op+"/"+f.name, func(t *testing.T) {
				fake.Script(f.step)
				err := calls[op](client(f.step.Wait()))
				fake.settle(f.step)
				var ue *ports.UpstreamError
				if !errors.As(err, &ue) {
					t.Fatalf("err = %v (%T), want an UpstreamError", err, err)
				}
				if ue.Kind != f.kind || ue.Retryable != f.retryable || ue.RetryAfter != f.retryAfter {
					t.Fatalf("classified as kind %d retryable %v retry-after %v; want kind %d retryable %v retry-after %v (%v)",
						ue.Kind, ue.Retryable, ue.RetryAfter, f.kind, f.retryable, f.retryAfter, ue)
				}
				if f.step.Status != 0 && ue.Raw == "" {
					t.Fatal("the provider's error body was not kept for the record")
				}
			})
		}
	}
	for _, d := range []struct {
		name   string
		status int
		want   error
	}{
		{"file gone (404)", http.StatusNotFound, video.ErrExpired},
		{"file gone (410)", http.StatusGone, video.ErrExpired},
		{"range outside the file", http.StatusRequestedRangeNotSatisfiable, video.ErrRangeNotValid},
	} {
		t.Run("download/"+d.name, func(t *testing.T) {
			fake.Script(Step{Status: d.status, Body: e.BadInput})
			if err := calls["download"](client(Patient)); !errors.Is(err, d.want) {
				t.Fatalf("err = %v, want %v", err, d.want)
			}
		})
	}
}

// RunVideo submits s and polls the job until it ends, at most polls times, returning its id and its end.
func RunVideo(t *testing.T, p ports.VideoProvider, s ports.VideoSubmission, polls int) (string, ports.VideoState) {
	t.Helper()
	id, err := p.Submit(context.Background(), s)
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	for range polls {
		st, err := p.Poll(context.Background(), id)
		if err != nil {
			t.Fatalf("poll: %v", err)
		}
		if st.Status.Final() {
			return id, st
		}
	}
	t.Fatalf("the job did not end in %d polls", polls)
	return "", ports.VideoState{}
}

// CheckVideoContent downloads an output whole and a range of it: the bytes are the fake's video of size bytes,
// the range comes back as a 206 with its Content-Range.
func CheckVideoContent(t *testing.T, p ports.VideoProvider, id string, out video.Output, size int64) {
	t.Helper()
	want, _ := io.ReadAll(NewVideoBytes(size))
	c, err := p.Download(context.Background(), id, out, "")
	if err != nil {
		t.Fatalf("download: %v", err)
	}
	got, err := io.ReadAll(c.Body)
	c.Body.Close()
	if err != nil || !bytes.Equal(got, want) || c.ContentType != "video/mp4" || c.Status != http.StatusOK {
		t.Fatalf("download: %d %s, %d bytes (want %d), %v", c.Status, c.ContentType, len(got), len(want), err)
	}
	c, err = p.Download(context.Background(), id, out, "bytes=100-199")
	if err != nil {
		t.Fatalf("range: %v", err)
	}
	got, _ = io.ReadAll(c.Body)
	c.Body.Close()
	if c.Status != http.StatusPartialContent || c.ContentRange != fmt.Sprintf("bytes 100-199/%d", size) || !bytes.Equal(got, want[100:200]) {
		t.Fatalf("range: %d %q, %d bytes", c.Status, c.ContentRange, len(got))
	}
}
