// Package video is video generation: jobs that an upstream provider runs, polled until they end, whose
// outputs the gateway then streams to the caller.
package video

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/domain/guardrail"
)

type Status string

const (
	Pending    Status = "pending"
	InProgress Status = "in_progress"
	Completed  Status = "completed"
	Failed     Status = "failed"
	Cancelled  Status = "cancelled"
	Expired    Status = "expired"
)

// Final reports whether a job in this status will change no more (but for expiry).
func (s Status) Final() bool { return s != Pending && s != InProgress }

// Frame is an image the video starts or ends with.
type Frame struct {
	URL  string
	Type string // first_frame or last_frame
}

// Reference is an image, audio or video the generation refers to.
type Reference struct {
	Type string // image_url, audio_url, video_url
	URL  string
}

// Request is a validated video request.
type Request struct {
	Model           string
	Prompt          string
	Duration        int // seconds; 0 leaves it to the provider
	Resolution      string
	AspectRatio     string
	Size            string
	Seed            *int64
	GenerateAudio   *bool
	FrameImages     []Frame
	InputReferences []Reference
	Options         map[string]any
	User            string
	SessionID       string
	// CallbackURL and PreviousJob say the request named a callback_url or a previous_job_id, which the gateway
	// does not serve: both are refused, rather than a caller waiting for a webhook that never comes or getting a
	// new video where it asked for a continuation.
	CallbackURL, PreviousJob bool
}

var (
	resolutions  = []string{"360p", "480p", "720p", "768p", "1080p", "1K", "2K", "4K"}
	aspectRatios = []string{"16:9", "9:16", "1:1", "4:3", "3:4", "3:2", "2:3", "21:9", "9:21"}
	sizePattern  = regexp.MustCompile(`^[1-9][0-9]{1,4}x[1-9][0-9]{1,4}$`)
)

// MaxDuration bounds a video's duration, in seconds.
const MaxDuration = 120

// CheckResolution refuses a resolution that is none of the reference's.
func CheckResolution(r string) error {
	if !slices.Contains(resolutions, r) {
		return fmt.Errorf("%q: must be one of %s", r, strings.Join(resolutions, ", "))
	}
	return nil
}

// CheckCap refuses a value a model's capability list cannot hold: resolutions, aspect_ratios, sizes and
// frame_images take the values a request may send.
func CheckCap(list, value string) error {
	switch list {
	case "resolutions":
		return CheckResolution(value)
	case "aspect_ratios":
		if !slices.Contains(aspectRatios, value) {
			return fmt.Errorf("%q: must be one of %s", value, strings.Join(aspectRatios, ", "))
		}
	case "sizes":
		if !sizePattern.MatchString(value) {
			return fmt.Errorf(`%q: must be "WIDTHxHEIGHT", like 1280x720`, value)
		}
	case "frame_images":
		if value != "first_frame" && value != "last_frame" {
			return fmt.Errorf("%q: must be first_frame or last_frame", value)
		}
	}
	return nil
}

// MaxPrompt bounds a prompt, in bytes.
const MaxPrompt = 32 << 10

// Validate checks the request; every error names its field.
func (r *Request) Validate() error {
	switch {
	case r.Model == "":
		return domain.Invalid("model", "is required")
	case strings.TrimSpace(r.Prompt) == "":
		return domain.Invalid("prompt", "is required")
	case len(r.Prompt) > MaxPrompt:
		return domain.Invalid("prompt", fmt.Sprintf("must be at most %d bytes", MaxPrompt))
	case r.Duration < 0 || r.Duration > MaxDuration:
		return domain.Invalid("duration", fmt.Sprintf("must be a number of seconds from 1 to %d", MaxDuration))
	case r.Resolution != "" && !slices.Contains(resolutions, r.Resolution):
		return domain.Invalid("resolution", "must be one of "+strings.Join(resolutions, ", "))
	case r.AspectRatio != "" && !slices.Contains(aspectRatios, r.AspectRatio):
		return domain.Invalid("aspect_ratio", "must be one of "+strings.Join(aspectRatios, ", "))
	case r.Size != "" && !sizePattern.MatchString(r.Size):
		return domain.Invalid("size", `must be "WIDTHxHEIGHT", like 1280x720`)
	case r.CallbackURL:
		return domain.Invalid("callback_url", "this gateway delivers no webhooks; poll the job's polling_url until it ends")
	case r.PreviousJob:
		return domain.Invalid("previous_job_id", "this gateway does not continue or extend jobs; send a new request")
	}
	if err := domain.CheckCallerIDs(r.SessionID, r.User); err != nil {
		return err
	}
	for i, f := range r.FrameImages {
		field := fmt.Sprintf("frame_images[%d]", i)
		if f.Type != "first_frame" && f.Type != "last_frame" {
			return domain.Invalid(field+".frame_type", "must be first_frame or last_frame")
		}
		if !httpURL(f.URL) {
			return domain.Invalid(field+".image_url.url", "must be an http(s) URL or a data: URL")
		}
	}
	for i, ref := range r.InputReferences {
		field := fmt.Sprintf("input_references[%d]", i)
		if ref.Type != "image_url" && ref.Type != "audio_url" && ref.Type != "video_url" {
			return domain.Invalid(field+".type", "must be image_url, audio_url or video_url")
		}
		if !httpURL(ref.URL) {
			return domain.Invalid(field+"."+ref.Type+".url", "must be an http(s) URL or a data: URL")
		}
	}
	return r.checkText()
}

// checkText refuses text the job and its record cannot store, in every field they keep.
func (r *Request) checkText() error {
	type field struct{ name, value string }
	fields := []field{
		{"model", r.Model}, {"prompt", r.Prompt}, {"user", r.User}, {"session_id", r.SessionID},
	}
	for i, f := range r.FrameImages {
		fields = append(fields, field{fmt.Sprintf("frame_images[%d].image_url.url", i), f.URL})
	}
	for i, ref := range r.InputReferences {
		fields = append(fields, field{fmt.Sprintf("input_references[%d].%s.url", i, ref.Type), ref.URL})
	}
	for _, f := range fields {
		if err := domain.CheckText(f.name, f.value); err != nil {
			return err
		}
	}
	return catalog.CheckOptions(r.Options)
}

func httpURL(u string) bool {
	return strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "data:")
}

// DefaultDuration is what a job is priced at when neither the request nor the model's configuration says how
// long its video is, until the provider does.
const DefaultDuration = 8

// Fits refuses, with a 400 naming the field, what the model's configuration says it does not take; what the
// configuration does not say is left to the provider.
func (r Request) Fits(c catalog.VideoCaps) error {
	refuse := func(field string, takes string) error {
		return domain.Invalid(field, fmt.Sprintf("model %s takes %s", r.Model, takes))
	}
	oneOf := func(what string, values []string) string {
		if len(values) == 0 {
			return "no " + what
		}
		return what + " " + strings.Join(values, ", ")
	}
	switch {
	case r.Duration > 0 && c.Durations != nil && !slices.Contains(c.Durations, r.Duration):
		seconds := make([]string, len(c.Durations))
		for i, d := range c.Durations {
			seconds[i] = strconv.Itoa(d)
		}
		return refuse("duration", oneOf("durations (seconds)", seconds))
	case r.Resolution != "" && c.Resolutions != nil && !slices.Contains(c.Resolutions, r.Resolution):
		return refuse("resolution", oneOf("resolutions", c.Resolutions))
	case r.AspectRatio != "" && c.AspectRatios != nil && !slices.Contains(c.AspectRatios, r.AspectRatio):
		return refuse("aspect_ratio", oneOf("aspect ratios", c.AspectRatios))
	case r.Size != "" && c.Sizes != nil && !slices.Contains(c.Sizes, r.Size):
		return refuse("size", oneOf("sizes", c.Sizes))
	case r.GenerateAudio != nil && *r.GenerateAudio && c.GenerateAudio != nil && !*c.GenerateAudio:
		return refuse("generate_audio", "no audio: it makes silent video")
	case r.Seed != nil && c.Seed != nil && !*c.Seed:
		return refuse("seed", "no seed")
	}
	for i, f := range r.FrameImages {
		if c.FrameImages != nil && !slices.Contains(c.FrameImages, f.Type) {
			return refuse(fmt.Sprintf("frame_images[%d].frame_type", i), oneOf("frame images", c.FrameImages))
		}
	}
	return nil
}

// Plan is what a job is billed by: the seconds of video expected (the provider may say otherwise when it ends)
// and the price of a second, for the resolution and sound the request asks for or the model makes by default.
type Plan struct {
	Seconds   int
	PerSecond *domain.Micros // nil: the endpoint sets no price
}

// PlanOf prices a request on an endpoint's pricing, given what the model makes by default (caps may be nil).
// A resolution no rate is set for is priced at the endpoint's own rates; with none of those, at the dearest
// resolution's, so that a job is never billed below what it may have cost.
func PlanOf(r Request, caps *catalog.VideoCaps, p catalog.Pricing) Plan {
	var c catalog.VideoCaps
	if caps != nil {
		c = *caps
	}
	plan := Plan{Seconds: cmp.Or(r.Duration, c.DefaultDuration, DefaultDuration)}
	audio := c.DefaultAudio
	if r.GenerateAudio != nil {
		audio = *r.GenerateAudio
	}
	rates := catalog.SecondRates{PerSecond: p.PerSecond, PerSecondWithAudio: p.PerSecondWithAudio}
	if at, ok := p.Rates(cmp.Or(r.Resolution, ResolutionOf(r.Size), c.DefaultResolution)); ok {
		rates = at
	} else if rates.PerSecond == nil && rates.PerSecondWithAudio == nil && p.Resolutions != nil {
		rates = dearest(*p.Resolutions, audio)
	}
	plan.PerSecond = rates.PerSecond
	if audio && rates.PerSecondWithAudio != nil {
		plan.PerSecond = rates.PerSecondWithAudio
	}
	return plan
}

// Cost is the price of the plan's seconds, or of seconds when the provider said how long the video is.
func (p Plan) Cost(seconds int) domain.Micros {
	if p.PerSecond == nil {
		return 0
	}
	return *p.PerSecond * domain.Micros(cmp.Or(seconds, p.Seconds))
}

// dearest is the resolution whose second (with or without sound) costs most.
func dearest(rs catalog.ResolutionRates, audio bool) catalog.SecondRates {
	var best catalog.SecondRates
	price := func(r catalog.SecondRates) domain.Micros {
		if audio && r.PerSecondWithAudio != nil {
			return *r.PerSecondWithAudio
		}
		if r.PerSecond != nil {
			return *r.PerSecond
		}
		return -1
	}
	for _, r := range rs {
		if price(r) > price(best) {
			best = r
		}
	}
	return best
}

// ResolutionOf names the resolution of a size ("1280x720" is 720p): its shorter side, or "" for a size that is
// none of the reference's resolutions.
func ResolutionOf(size string) string {
	w, h, ok := strings.Cut(size, "x")
	if !ok {
		return ""
	}
	wi, err1 := strconv.Atoi(w)
	hi, err2 := strconv.Atoi(h)
	if err1 != nil || err2 != nil {
		return ""
	}
	if res := strconv.Itoa(min(wi, hi)) + "p"; slices.Contains(resolutions, res) {
		return res
	}
	return ""
}

// Output is one generated video, as the provider refers to it.
type Output struct {
	Ref         string // the provider's handle: a file URI, or empty when the job id is enough
	ContentType string
}

// jobSuffix is how much of the random value a job id keeps.
const jobSuffix = 20

// NewJobID makes a video job id, gen-vid-<unix seconds>-<suffix>, from an unguessable random value such as a
// UUID: its first 20 characters other than hyphens, or all of them when it has fewer.
func NewJobID(now time.Time, random string) string {
	suffix := strings.ReplaceAll(random, "-", "")
	if len(suffix) > jobSuffix {
		suffix = suffix[:jobSuffix]
	}
	return fmt.Sprintf("gen-vid-%d-%s", now.Unix(), suffix)
}

// Job is one video generation.
type Job struct {
	ID            string
	WorkspaceID   string
	KeyHash       string
	UserID        *string
	Model         string
	Provider      string
	UpstreamModel string
	UpstreamID    string
	Pricing       catalog.Pricing
	Status        Status
	Request       Request
	Outputs       []Output
	Error         string
	Seconds       int
	Cost          domain.Micros
	GenerationID  string
	Holds         []guardrail.Hold // budget reservations taken at creation, settled when the job ends
	Flags         []string
	Attempts      []generation.Attempt
	Caller        generation.Caller
	NextPollAt    time.Time
	ExpiresAt     *time.Time
	CreatedAt     time.Time
	UpdatedAt     time.Time
	CompletedAt   *time.Time
}

var (
	ErrNotFound      = domain.E(domain.KindNotFound, "video_job_not_found", "video job not found")
	ErrNotReady      = domain.E(domain.KindConflict, "video_not_ready", "")
	ErrExpired       = domain.E(domain.KindGone, "video_expired", "the video has expired at the provider and can no longer be downloaded")
	ErrNoSuchOutput  = domain.E(domain.KindNotFound, "video_output_not_found", "")
	ErrRangeNotValid = domain.E(domain.KindRangeNotSatisfiable, "range_not_satisfiable", "the requested range is not satisfiable")
)

// Status as of now: a completed job whose outputs are past their expiry is expired.
func (j Job) StatusAt(now time.Time) Status {
	if j.Status == Completed && j.ExpiresAt != nil && !now.Before(*j.ExpiresAt) {
		return Expired
	}
	return j.Status
}

// Output returns output index of a job that can be downloaded now: 409 while it runs or when it did not
// complete, 410 once expired, 404 for an index past the outputs.
func (j Job) Output(index int, now time.Time) (Output, error) {
	switch st := j.StatusAt(now); st {
	case Completed:
	case Expired:
		return Output{}, ErrExpired
	default:
		return Output{}, ErrNotReady.WithMsg(fmt.Sprintf("the video job is %s; its content is available once it is completed", st)).
			With("status", string(st))
	}
	if index >= len(j.Outputs) {
		return Output{}, ErrNoSuchOutput.WithMsg(fmt.Sprintf("index: the job has %d output(s); %d is out of range", len(j.Outputs), index)).
			With("field", "index")
	}
	return j.Outputs[index], nil
}
