package httpapi

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/domain/video"
	"github.com/switchboard-ai/switchboard/ports"
)

// VideosHandler serves /videos.
type VideosHandler struct {
	videos   ports.VideoService
	basePath string
}

func NewVideosHandler(v ports.VideoService, cfg Config) *VideosHandler {
	return &VideosHandler{videos: v, basePath: cfg.BasePath}
}

type urlRef struct {
	URL string `json:"url"`
}

type videoReq struct {
	Model         *string `json:"model"`
	Prompt        *string `json:"prompt"`
	Duration      *int    `json:"duration"`
	Resolution    *string `json:"resolution"`
	AspectRatio   *string `json:"aspect_ratio"`
	Size          *string `json:"size"`
	Seed          *int64  `json:"seed"`
	GenerateAudio *bool   `json:"generate_audio"`
	FrameImages   []struct {
		ImageURL  urlRef `json:"image_url"`
		FrameType string `json:"frame_type"`
	} `json:"frame_images"`
	InputReferences []struct {
		Type     string  `json:"type"`
		ImageURL *urlRef `json:"image_url"`
		AudioURL *urlRef `json:"audio_url"`
		VideoURL *urlRef `json:"video_url"`
	} `json:"input_references"`
	Provider *struct {
		Options map[string]any `json:"options"`
	} `json:"provider"`
	User          *string `json:"user"`
	SessionID     *string `json:"session_id"`
	CallbackURL   *string `json:"callback_url"`
	PreviousJobID *string `json:"previous_job_id"`
}

func (r videoReq) request() video.Request {
	req := video.Request{Model: deref(r.Model), Prompt: deref(r.Prompt), Resolution: deref(r.Resolution),
		AspectRatio: deref(r.AspectRatio), Size: deref(r.Size), Seed: r.Seed, GenerateAudio: r.GenerateAudio,
		User: deref(r.User), SessionID: deref(r.SessionID), CallbackURL: r.CallbackURL != nil, PreviousJob: r.PreviousJobID != nil}
	if r.Duration != nil {
		req.Duration = *r.Duration
		if req.Duration == 0 {
			req.Duration = -1 // an explicit 0 is invalid, not "the provider's default"
		}
	}
	for _, f := range r.FrameImages {
		req.FrameImages = append(req.FrameImages, video.Frame{URL: f.ImageURL.URL, Type: f.FrameType})
	}
	for _, ref := range r.InputReferences {
		u := map[string]*urlRef{"image_url": ref.ImageURL, "audio_url": ref.AudioURL, "video_url": ref.VideoURL}[ref.Type]
		vr := video.Reference{Type: ref.Type}
		if u != nil {
			vr.URL = u.URL
		}
		req.InputReferences = append(req.InputReferences, vr)
	}
	if r.Provider != nil {
		req.Options = r.Provider.Options
	}
	return req
}

// videoJob is the reference's VideoJob.
type videoJob struct {
	ID           string      `json:"id"`
	PollingURL   string      `json:"polling_url"`
	Status       string      `json:"status"`
	GenerationID *string     `json:"generation_id,omitempty"`
	UnsignedURLs []string    `json:"unsigned_urls,omitempty"`
	Error        *string     `json:"error,omitempty"`
	Usage        *videoUsage `json:"usage,omitempty"`
}

type videoUsage struct {
	Cost   usd  `json:"cost"`
	IsBYOK bool `json:"is_byok"`
}

// apiRoot is the absolute URL of the API root as the caller reached it.
func (h *VideosHandler) apiRoot(c *gin.Context) string {
	scheme := "http"
	if c.Request.TLS != nil || strings.EqualFold(c.GetHeader("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	return scheme + "://" + c.Request.Host + h.basePath
}

func (h *VideosHandler) toJob(c *gin.Context, j video.Job, st video.Status) videoJob {
	root := h.apiRoot(c) + "/videos/" + j.ID
	out := videoJob{ID: j.ID, PollingURL: root, Status: string(st)}
	switch st {
	case video.Completed:
		for i := range j.Outputs {
			out.UnsignedURLs = append(out.UnsignedURLs, root+"/content?index="+strconv.Itoa(i))
		}
		out.GenerationID = &j.GenerationID
		out.Usage = &videoUsage{Cost: usd(j.Cost)}
	case video.Failed, video.Cancelled:
		msg := j.Error
		if msg == "" {
			msg = "the provider did not complete the video"
		}
		out.Error, out.GenerationID = &msg, &j.GenerationID
		out.Usage = &videoUsage{}
	}
	return out
}

func (h *VideosHandler) create(c *gin.Context) {
	var body videoReq
	if err := bindJSON(c, &body); err != nil {
		writeError(c, err)
		return
	}
	j, err := h.videos.Create(c.Request.Context(), principal(c), body.request(), caller(c))
	if err != nil {
		writeError(c, err)
		return
	}
	c.JSON(http.StatusAccepted, h.toJob(c, j, video.Pending))
}

func (h *VideosHandler) get(c *gin.Context) {
	j, err := h.videos.Get(c.Request.Context(), principal(c), c.Param("jobId"))
	if err != nil {
		writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, h.toJob(c, j, j.Status))
}

var errIndex = domain.Invalid("index", "must be an integer of at least 0")

// maxRange bounds the Range header passed to a provider: a longer one is a 416, never forwarded.
const maxRange = 256

func (h *VideosHandler) content(c *gin.Context) {
	index := 0
	if raw, given := c.GetQuery("index"); given {
		var ok bool
		if index, ok = decimal(raw, 6); !ok {
			writeError(c, errIndex)
			return
		}
	}
	byteRange, err := forwardedRange(c.GetHeader("Range"))
	if err != nil {
		writeError(c, err)
		return
	}
	sink := &videoSink{newFlushWriter(c)}
	if err := h.videos.Content(c.Request.Context(), principal(c), c.Param("jobId"), index, byteRange, sink); err != nil {
		writeError(c, err)
	}
}

// forwardedRange is the Range header to send the provider for the caller's: "" (the whole content) for none, and
// for one RFC 9110 (14.1.1) calls invalid, which is ignored (14.2): another unit, a malformed spec, a last before
// its first. A valid one is written as every provider reads it: the unit in lower case, no whitespace or empty
// elements, numbers without leading zeros and at most the largest int64 (a larger position is past the end of any
// file, and means what it meant: to the end, the whole file, or nothing), and without the suffixes of length 0,
// which select nothing: a provider that reads ranges as Go's net/http does refuses "BYTES=0-1" or a last-pos past
// int64 as invalid (416), and answers "bytes=-0" with an empty 206, which reads as a failed download. A header
// longer than maxRange, or of zero-length suffixes only, is a 416 before any provider is asked; whether another
// range is satisfiable is the provider's to say.
func forwardedRange(h string) (string, error) {
	if len(h) > maxRange {
		return "", video.ErrRangeNotValid.WithMsg(fmt.Sprintf("the Range header is longer than %d bytes", maxRange))
	}
	unit, set, ok := strings.Cut(h, "=")
	if !ok || !strings.EqualFold(strings.TrimSpace(unit), "bytes") {
		return "", nil
	}
	var specs []string
	empty := false // a suffix of length 0 was given
	for spec := range strings.SplitSeq(set, ",") {
		spec = strings.Trim(spec, " \t")
		if spec == "" {
			continue
		}
		first, last, ok := strings.Cut(spec, "-")
		if !ok || !digits(last) && last != "" || !digits(first) && first != "" || first == "" && last == "" {
			return "", nil
		}
		if first != "" && last != "" && decimalLess(last, first) {
			return "", nil
		}
		if first == "" && strings.Trim(last, "0") == "" {
			empty = true
			continue
		}
		specs = append(specs, position(first)+"-"+position(last))
	}
	if len(specs) == 0 {
		if empty {
			return "", video.ErrRangeNotValid.WithMsg("the range selects no bytes: a suffix of length 0")
		}
		return "", nil
	}
	return "bytes=" + strings.Join(specs, ","), nil
}

// position writes a run of digits ("" for none) as the number it writes, at most the largest int64.
func position(s string) string {
	if s == "" {
		return ""
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil { // digits only: out of range
		n = math.MaxInt64
	}
	return strconv.FormatInt(n, 10)
}

// digits says s is one or more ASCII digits.
func digits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// decimalLess compares two runs of digits as the numbers they write, of any length.
func decimalLess(a, b string) bool {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// videoSink is a download's response: the provider's status (200 or 206) and content headers, nothing else of
// the provider's (no URL, no credential).
type videoSink struct{ flushWriter }

func (s *videoSink) Start(v ports.VideoContent) {
	h := s.c.Writer.Header()
	h.Set("Content-Type", v.ContentType)
	h.Set("Accept-Ranges", "bytes")
	if v.ContentLength >= 0 {
		h.Set("Content-Length", strconv.FormatInt(v.ContentLength, 10))
	}
	if v.ContentRange != "" {
		h.Set("Content-Range", v.ContentRange)
	}
	status := v.Status
	if status != http.StatusPartialContent {
		status = http.StatusOK
	}
	s.start(status)
}

// videoModel is the reference's VideoModel; what the configuration does not say is null.
type videoModel struct {
	ID                           string            `json:"id"`
	Name                         string            `json:"name"`
	CanonicalSlug                string            `json:"canonical_slug"`
	Created                      int64             `json:"created"`
	AllowedPassthroughParameters []string          `json:"allowed_passthrough_parameters"`
	Creativity                   []int             `json:"creativity"`
	GenerateAudio                *bool             `json:"generate_audio"`
	Seed                         *bool             `json:"seed"`
	SupportedDurations           []int             `json:"supported_durations"`
	SupportedResolutions         []string          `json:"supported_resolutions"`
	SupportedAspectRatios        []string          `json:"supported_aspect_ratios"`
	SupportedFrameImages         []string          `json:"supported_frame_images"`
	SupportedSizes               []string          `json:"supported_sizes"`
	UpscaleFactor                *struct{}         `json:"upscale_factor"`
	PricingSKUs                  map[string]string `json:"pricing_skus,omitempty"`
}

func (h *VideosHandler) models(c *gin.Context) {
	ms := h.videos.Models()
	out := make([]videoModel, len(ms))
	for i, m := range ms {
		out[i] = videoModel{ID: m.Model.ID, Name: m.Model.ID, CanonicalSlug: m.Model.ID, Created: m.Created.Unix(),
			AllowedPassthroughParameters: []string{}}
		if v := m.Model.Video; v != nil {
			out[i].SupportedDurations, out[i].SupportedResolutions, out[i].SupportedAspectRatios = v.Durations, v.Resolutions, v.AspectRatios
			out[i].SupportedSizes, out[i].SupportedFrameImages = v.Sizes, v.FrameImages
			out[i].GenerateAudio, out[i].Seed = v.GenerateAudio, v.Seed
		}
		if len(m.Model.Endpoints) > 0 {
			out[i].PricingSKUs = pricingSKUs(m.Model.Endpoints[0].Pricing)
		}
	}
	data(c, http.StatusOK, out)
}

// pricingSKUs lists the first endpoint's prices of a second of video, in USD: per_second and
// per_second_with_audio, then each resolution's as "<resolution>_per_second" and "<resolution>_per_second_with_audio".
func pricingSKUs(p catalog.Pricing) map[string]string {
	skus := map[string]string{}
	add := func(prefix string, r catalog.SecondRates) {
		if r.PerSecond != nil {
			skus[prefix+"per_second"] = r.PerSecond.Decimal()
		}
		if r.PerSecondWithAudio != nil {
			skus[prefix+"per_second_with_audio"] = r.PerSecondWithAudio.Decimal()
		}
	}
	add("", catalog.SecondRates{PerSecond: p.PerSecond, PerSecondWithAudio: p.PerSecondWithAudio})
	if p.Resolutions != nil {
		for res, r := range *p.Resolutions {
			add(res+"_", r)
		}
	}
	if len(skus) == 0 {
		return nil
	}
	return skus
}
