// Package jsonenc is the adapters' one hand-written JSON reader and writer. It appends JSON by hand where a
// reflective encoder costs too much: a chat answer's events, one a token (AppendString), and the bodies of chat and
// speech calls to OpenAI-compatible upstreams; and reads it by hand (Scanner) where a reflective decoder does: the
// events of an upstream's stream, one a token, and speech requests' bodies. Each decoder written on Scanner is held
// to encoding/json by a differential fuzz test (jsonenctest). Scanner also counts a request body's lists before
// encoding/json decodes it (inbound.Limits), reading it without allocating.
package jsonenc

import (
	"errors"
	"math"
	"strconv"
	"unicode/utf8"
)

// AppendString appends s as a JSON string, escaped as encoding/json escapes it: quotes, backslashes and
// control characters, <, > and & (as \u003c...), U+2028 and U+2029; invalid UTF-8 becomes U+FFFD.
func AppendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(append(b, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(b, s[start:]...), '"')
}

// AppendFloat appends f as encoding/json writes a float64: the shortest decimal that reads back as f, with an
// exponent only for the very small and the very large.
func AppendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, errors.New("json: unsupported value: " + strconv.FormatFloat(f, 'g', -1, 64))
	}
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		b = strconv.AppendFloat(b, f, 'e', -1, 64)
		// e-09 as e-9, as encoding/json writes it
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
		return b, nil
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64), nil
}
