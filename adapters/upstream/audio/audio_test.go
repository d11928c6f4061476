package audio_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"testing"

	"github.com/switchboard-ai/switchboard/adapters/upstream/audio"
)

// oneByteReader returns its data a byte at a time: every frame is split across reads.
type oneByteReader struct{ data []byte }

func (r *oneByteReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	p[0] = r.data[0]
	r.data = r.data[1:]
	return 1, nil
}

func s16(samples ...int16) []byte {
	var b []byte
	for _, s := range samples {
		b = binary.LittleEndian.AppendUint16(b, uint16(s))
	}
	return b
}

func f32(samples ...float32) []byte {
	var b []byte
	for _, s := range samples {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(s))
	}
	return b
}

func decode(b []byte) []int16 {
	out := make([]int16, len(b)/2)
	for i := range out {
		out[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return out
}

func wav(f audio.Format, dataSize uint32, chunks [][]byte, data []byte) []byte {
	var b bytes.Buffer
	b.WriteString("RIFF")
	binary.Write(&b, binary.LittleEndian, uint32(0xFFFFFFFF))
	b.WriteString("WAVE")
	for _, c := range chunks {
		b.Write(c)
	}
	tag, bits := uint16(1), uint16(16)
	if f.Float32 {
		tag, bits = 3, 32
	}
	b.WriteString("fmt ")
	binary.Write(&b, binary.LittleEndian, uint32(16))
	binary.Write(&b, binary.LittleEndian, tag)
	binary.Write(&b, binary.LittleEndian, uint16(f.Channels))
	binary.Write(&b, binary.LittleEndian, uint32(f.Rate))
	binary.Write(&b, binary.LittleEndian, uint32(f.Rate*f.Channels*int(bits)/8))
	binary.Write(&b, binary.LittleEndian, uint16(f.Channels*int(bits)/8))
	binary.Write(&b, binary.LittleEndian, bits)
	b.WriteString("data")
	binary.Write(&b, binary.LittleEndian, dataSize)
	b.Write(data)
	return b.Bytes()
}

func TestToPCM(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		f    audio.Format
		in   []byte
		want []int16
	}{
		{"passthrough", audio.Format{Rate: 24000, Channels: 1}, s16(1, -2, 3), []int16{1, -2, 3}},
		{"float to int with clamping", audio.Format{Rate: 24000, Channels: 1, Float32: true}, f32(0.5, -1.5, 1), []int16{16384, -32768, 32767}},
		{"stereo downmix", audio.Format{Rate: 24000, Channels: 2}, s16(100, 300, -100, -300), []int16{200, -200}},
		{"upsample 12k to 24k", audio.Format{Rate: 12000, Channels: 1}, s16(0, 1000, 2000), []int16{0, 500, 1000, 1500, 2000}},
		{"downsample 48k to 24k", audio.Format{Rate: 48000, Channels: 1}, s16(0, 100, 200, 300, 400), []int16{0, 200, 400}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := io.ReadAll(audio.ToPCM(&oneByteReader{data: tt.in}, tt.f))
			if err != nil {
				t.Fatal(err)
			}
			if g := decode(got); !equalNear(g, tt.want) {
				t.Fatalf("got %v, want %v", g, tt.want)
			}
		})
	}
}

func equalNear(a, b []int16) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if d := int(a[i]) - int(b[i]); d < -1 || d > 1 {
			return false
		}
	}
	return true
}

// TestResampleLength checks 22,050 Hz (espeak-ng's rate) becomes 24 kHz with the right number of samples.
func TestResampleLength(t *testing.T) {
	t.Parallel()
	in := make([]int16, 22050)
	out, err := io.ReadAll(audio.ToPCM(bytes.NewReader(s16(in...)), audio.Format{Rate: 22050, Channels: 1}))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(out) / 2; n < 23998 || n > 24000 {
		t.Fatalf("%d samples from one second at 22050 Hz, want about 24000", n)
	}
}

func TestFromWAV(t *testing.T) {
	t.Parallel()
	list := append([]byte("LIST"), 0, 0, 0, 0)
	list = binary.LittleEndian.AppendUint32(list[:4], 5)
	list = append(list, 'I', 'N', 'F', 'O', 'x', 0) // odd size, plus its pad byte
	tests := []struct {
		name string
		raw  []byte
		want []int16
	}{
		{"plain", wav(audio.Format{Rate: 24000, Channels: 1}, 6, nil, s16(1, 2, 3)), []int16{1, 2, 3}},
		{"streaming size", wav(audio.Format{Rate: 24000, Channels: 1}, 0xFFFFFFFF, nil, s16(4, 5)), []int16{4, 5}},
		{"zero size reads to the end", wav(audio.Format{Rate: 24000, Channels: 1}, 0, nil, s16(6)), []int16{6}},
		{"LIST chunk before data", wav(audio.Format{Rate: 24000, Channels: 1}, 4, [][]byte{list}, s16(7, 8)), []int16{7, 8}},
		{"float stereo", wav(audio.Format{Rate: 24000, Channels: 2, Float32: true}, 16, nil, f32(0.5, 0.5, -0.5, -0.5)), []int16{16384, -16384}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := audio.FromWAV(&oneByteReader{data: tt.raw})
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(r)
			if err != nil || !equalNear(decode(got), tt.want) {
				t.Fatalf("got %v (%v), want %v", decode(got), err, tt.want)
			}
		})
	}
	if _, err := audio.FromWAV(bytes.NewReader([]byte("ID3\x03not a wav file"))); err == nil {
		t.Fatal("an mp3 passed as WAV")
	}
}

// TestFromWAVMalformed: a header an upstream got wrong is an error, never a panic nor an allocation of what a
// chunk claims. A fmt chunk of 0xFFFFFFFF bytes (plus its pad byte, wrapping to 0 in uint32) panicked the call
// (a 500 without a record); one of 0xFFFFFFF0 allocated 4 GiB before reading it; 65535 channels made frames
// larger than the converter's buffer, and reading them spun for ever.
func TestFromWAVMalformed(t *testing.T) {
	t.Parallel()
	chunk := func(id string, size uint32, body ...byte) []byte {
		return append(binary.LittleEndian.AppendUint32([]byte(id), size), body...)
	}
	head := []byte("RIFF\xff\xff\xff\xffWAVE")
	for _, tt := range []struct {
		name string
		raw  []byte
	}{
		{"fmt size wraps", append(head, chunk("fmt ", 0xFFFFFFFF, make([]byte, 64)...)...)},
		{"fmt size huge", append(head, chunk("fmt ", 0xFFFFFFF0, make([]byte, 64)...)...)},
		{"fmt size short", append(head, chunk("fmt ", 15, make([]byte, 64)...)...)},
		// a frame past the converter's buffer: reading it spun for ever, on no input, whatever the caller did
		{"65535 channels", wav(audio.Format{Rate: 24000, Channels: 65535}, 0, nil, make([]byte, 1<<17))},
		{"other chunk size wraps", append(append(head, chunk("LIST", 0xFFFFFFFF)...), wav(audio.Format{Rate: 24000, Channels: 1}, 2, nil, s16(1))[12:]...)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := audio.FromWAV(bytes.NewReader(tt.raw)); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}
