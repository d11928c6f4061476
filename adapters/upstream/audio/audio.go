// Package audio turns what providers send into the gateway's PCM: signed 16-bit little-endian, mono, 24 kHz.
// Everything streams: memory stays flat whatever the clip's length, and frames split across reads are carried.
package audio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/switchboard-ai/switchboard/domain/speech"
)

// Format describes raw PCM frames.
type Format struct {
	Rate     int
	Channels int
	Float32  bool // IEEE float samples; otherwise signed 16-bit integers
}

func (f Format) frameSize() int {
	if f.Float32 {
		return 4 * f.Channels
	}
	return 2 * f.Channels
}

// ToPCM converts frames of format f read from r into the gateway's PCM. Audio that is already in it passes
// through untouched.
func ToPCM(r io.Reader, f Format) io.Reader {
	if f.Rate == speech.PCMRate && f.Channels == 1 && !f.Float32 {
		return r
	}
	c := &converter{src: r, f: f, in: make([]byte, 0, 32<<10), step: float64(f.Rate) / speech.PCMRate}
	return c
}

type converter struct {
	src  io.Reader
	f    Format
	in   []byte // unread input, always less than one frame between reads
	out  []byte // converted output not yet returned
	step float64
	// resampler state: the last input sample, and the position of the next output sample after it
	prev    float64
	pos     float64
	started bool
	err     error
}

func (c *converter) Read(p []byte) (int, error) {
	for len(c.out) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		n, err := c.src.Read(c.in[len(c.in):cap(c.in)])
		c.in = c.in[:len(c.in)+n]
		c.convert()
		if err != nil {
			c.err = err
		}
	}
	n := copy(p, c.out)
	c.out = c.out[n:]
	return n, nil
}

// convert consumes every whole frame in c.in; a partial frame stays for the next read.
func (c *converter) convert() {
	fs := c.f.frameSize()
	whole := len(c.in) / fs * fs
	out := c.out[:0]
	for off := 0; off < whole; off += fs {
		out = c.emit(out, c.sample(c.in[off:off+fs]))
	}
	rest := copy(c.in, c.in[whole:])
	c.in = c.in[:rest]
	c.out = out
}

// sample reads one frame and downmixes it to one sample in [-1, 1].
func (c *converter) sample(frame []byte) float64 {
	var sum float64
	for ch := range c.f.Channels {
		if c.f.Float32 {
			sum += float64(math.Float32frombits(binary.LittleEndian.Uint32(frame[4*ch:])))
		} else {
			sum += float64(int16(binary.LittleEndian.Uint16(frame[2*ch:]))) / 32768
		}
	}
	return sum / float64(c.f.Channels)
}

// emit appends the output samples that one input sample completes. Resampling is linear: with the previous
// input sample at time 0 and s at time 1 (in input samples), every output time up to 1 is interpolated; output
// times advance by step = input rate / output rate.
func (c *converter) emit(out []byte, s float64) []byte {
	if c.f.Rate == speech.PCMRate {
		return appendS16(out, s)
	}
	if !c.started {
		c.prev, c.started = s, true
		return out
	}
	for c.pos <= 1 {
		out = appendS16(out, c.prev+(s-c.prev)*c.pos)
		c.pos += c.step
	}
	c.pos--
	c.prev = s
	return out
}

func appendS16(out []byte, s float64) []byte {
	v := math.Round(s * 32767)
	v = max(-32768, min(32767, v))
	return binary.LittleEndian.AppendUint16(out, uint16(int16(v)))
}

// ErrNotWAV is returned for a body that does not start with a RIFF/WAVE header.
var ErrNotWAV = errors.New("not a WAV stream")

// maxFmtChunk bounds a WAV fmt chunk: 16, 18 or 40 bytes in practice (WAVE_FORMAT_EXTENSIBLE), whatever its
// header claims.
const maxFmtChunk = 1 << 10

// maxChannels bounds a WAV stream's channels (WAVE_FORMAT_EXTENSIBLE names 18 speaker positions), so that a frame
// always fits in the converter's buffer: a larger one would never be read whole.
const maxChannels = 64

// FromWAV reads a WAV stream and returns its samples as the gateway's PCM. It walks the RIFF chunks rather than
// assuming a 44-byte header, and reads to the end when the data size is a streaming placeholder (0 or 0xFFFFFFFF).
func FromWAV(r io.Reader) (io.Reader, error) {
	var hdr [12]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotWAV, err)
	}
	if string(hdr[0:4]) != "RIFF" || string(hdr[8:12]) != "WAVE" {
		return nil, ErrNotWAV
	}
	var f Format
	for {
		var ch [8]byte
		if _, err := io.ReadFull(r, ch[:]); err != nil {
			return nil, fmt.Errorf("WAV: no data chunk: %w", err)
		}
		id, size := string(ch[0:4]), binary.LittleEndian.Uint32(ch[4:8])
		padded := int64(size) + int64(size%2) // chunks are padded to an even size
		switch id {
		case "fmt ":
			if size < 16 || size > maxFmtChunk {
				return nil, fmt.Errorf("WAV: a fmt chunk of %d bytes", size)
			}
			body := make([]byte, padded)
			if _, err := io.ReadFull(r, body); err != nil {
				return nil, fmt.Errorf("WAV: short fmt chunk: %v", err)
			}
			tag := binary.LittleEndian.Uint16(body[0:2])
			if tag == 0xFFFE && size >= 26 { // WAVE_FORMAT_EXTENSIBLE: the sub-format's first two bytes are the tag
				tag = binary.LittleEndian.Uint16(body[24:26])
			}
			f = Format{Channels: int(binary.LittleEndian.Uint16(body[2:4])), Rate: int(binary.LittleEndian.Uint32(body[4:8]))}
			bits := binary.LittleEndian.Uint16(body[14:16])
			switch {
			case tag == 1 && bits == 16:
			case tag == 3 && bits == 32:
				f.Float32 = true
			default:
				return nil, fmt.Errorf("WAV: unsupported encoding (format %d, %d bits)", tag, bits)
			}
			if f.Channels < 1 || f.Channels > maxChannels || f.Rate < 1000 {
				return nil, fmt.Errorf("WAV: bad fmt chunk (%d channels, %d Hz)", f.Channels, f.Rate)
			}
		case "data":
			if f.Rate == 0 {
				return nil, errors.New("WAV: data before fmt")
			}
			data := r
			if size != 0 && size != 0xFFFFFFFF {
				data = io.LimitReader(r, int64(size))
			}
			return ToPCM(data, f), nil
		default: // LIST, fact, ...: skip, with the pad byte of odd sizes
			if _, err := io.CopyN(io.Discard, r, padded); err != nil {
				return nil, fmt.Errorf("WAV: short %q chunk: %w", id, err)
			}
		}
	}
}
