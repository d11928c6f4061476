// Package vector is the wire encodings of an embedding that the adapters share: OpenAI's base64 encoding_format,
// which the gateway reads from OpenAI-compatible upstreams and writes to its callers.
package vector

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"math"
)

// Base64 is a vector as OpenAI's base64 encoding_format has it: the standard base64 of its numbers as
// little-endian float32s.
func Base64(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// FromBase64 reads a base64 vector (Base64).
func FromBase64(text []byte) ([]float32, error) {
	b := make([]byte, base64.StdEncoding.DecodedLen(len(text)))
	n, err := base64.StdEncoding.Decode(b, text)
	if err != nil {
		return nil, err
	}
	b = b[:n]
	if len(b)%4 != 0 {
		return nil, errors.New("a base64 embedding is not a whole number of float32s")
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}
