// Package jsonenc is the adapters' one hand-written JSON reader and writer. It appends JSON by hand where a
// reflective encoder costs too much: a chat answer's events, one a token (AppendString); and reads it by hand
// (Scanner) where a reflective decoder does: the events of an upstream's stream, one a token. Each decoder written on Scanner is held
// to encoding/json by a differential fuzz test (jsonenctest). Scanner also counts a request body's lists before
// encoding/json decodes it (inbound.Limits), reading it without allocating, and finds the strings encoding/json would
// mend (Intact).
package jsonenc

import "unicode/utf8"

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
