package fakes

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// VideoBytes is n bytes of "video": an MP4 ftyp box, then a pattern that depends only on the offset, so any
// range of it can be checked.
type VideoBytes struct {
	n, off int64
}

func NewVideoBytes(n int64) *VideoBytes { return &VideoBytes{n: n} }

var ftyp = []byte{0, 0, 0, 0x18, 'f', 't', 'y', 'p', 'i', 's', 'o', 'm', 0, 0, 2, 0, 'i', 's', 'o', 'm', 'i', 's', 'o', '2'}

// pattern repeats after the ftyp box; its length is prime, so it lines up with no buffer size.
var pattern = func() []byte {
	p := make([]byte, 65521)
	for i := range p {
		p[i] = byte(i*31 + i>>9)
	}
	return p
}()

// At is the byte at offset i.
func At(i int64) byte {
	if i < int64(len(ftyp)) {
		return ftyp[i]
	}
	return pattern[i%int64(len(pattern))]
}

func (v *VideoBytes) Read(p []byte) (int, error) {
	if v.off >= v.n {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), v.n-v.off))
	for i := 0; i < n; {
		off := v.off + int64(i)
		if off < int64(len(ftyp)) {
			p[i] = ftyp[off]
			i++
			continue
		}
		i += copy(p[i:n], pattern[off%int64(len(pattern)):])
	}
	v.off += int64(n)
	return n, nil
}

func (v *VideoBytes) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += v.off
	case io.SeekEnd:
		offset += v.n
	}
	if offset < 0 {
		return 0, errors.New("negative seek")
	}
	v.off = offset
	return offset, nil
}

// cutting aborts the connection after n bytes of the body (the client sees an unexpected EOF).
type cutting struct {
	io.ReadSeeker
	left int64
}

func (c *cutting) Read(p []byte) (int, error) {
	if c.left <= 0 {
		panic(http.ErrAbortHandler)
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.ReadSeeker.Read(p)
	c.left -= int64(n)
	return n, err
}

// VideoScript says how a fake's video jobs go.
type VideoScript struct {
	// Polls is how many polls a job stays unfinished (in progress) before it ends.
	Polls int
	// Fail ends jobs failed instead of completed; Filtered (Veo) ends them with no samples, safety-filtered.
	Fail, Filtered bool
	// Outputs is how many videos a job makes (Veo; Sora makes one).
	Outputs int
	// Size is each video's length; Chunked sends it without Content-Length.
	Size    int64
	Chunked bool
	// Cut aborts downloads after this many bytes.
	Cut int64
	// Expired makes downloads answer 404, as after the provider's expiry.
	Expired bool
	// Stall makes downloads send nothing until the caller gives up: a provider that times out. StallBody sends
	// the headers and StallAfter bytes of the body first.
	Stall, StallBody bool
	StallAfter       int64
	// ExpiresAt is the expiry Sora reports for completed videos (an hour from now when zero).
	ExpiresAt time.Time
}

type videoJobs struct {
	mu     sync.Mutex
	script VideoScript
	polls  map[string]int
	next   int
}

func (v *videoJobs) create() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.polls == nil {
		v.polls = map[string]int{}
	}
	v.next++
	id := "job" + strconv.Itoa(v.next)
	v.polls[id] = 0
	return id
}

// poll counts a poll of id and returns how many came before, or false for an unknown job.
func (v *videoJobs) poll(id string) (int, VideoScript, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	n, ok := v.polls[id]
	if ok {
		v.polls[id] = n + 1
	}
	return n, v.script, ok
}

func (v *videoJobs) known(id string) (VideoScript, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	_, ok := v.polls[id]
	return v.script, ok
}

// SetVideo scripts the jobs created from now on (and the downloads of all).
func (v *videoJobs) SetVideo(s VideoScript) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.script = s
}

// serveVideo answers a download of a video of the script's size, honouring Range, or streams it chunked.
func serveVideo(w http.ResponseWriter, r *http.Request, s VideoScript) {
	if s.Stall {
		<-r.Context().Done()
		return
	}
	size := s.Size
	if size == 0 {
		size = 256 << 10
	}
	var body io.ReadSeeker = NewVideoBytes(size)
	if s.Cut > 0 {
		body = &cutting{ReadSeeker: body, left: s.Cut}
	}
	w.Header().Set("Content-Type", "video/mp4")
	if s.StallBody {
		if s.StallAfter == 0 {
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		stream(w, r, body, Step{HoldAfter: int(s.StallAfter)})
		return
	}
	if s.Chunked {
		stream(w, r, body, Step{})
		return
	}
	http.ServeContent(w, r, "", time.Time{}, body)
}
