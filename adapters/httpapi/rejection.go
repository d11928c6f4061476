package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// rejection renders, in the error envelope, the answer to a request the server refuses before any handler runs
// (httpserver.Server.Reject): a request line, URL or header it cannot parse (400, e.g. GET /presets/%zz), headers
// past net/http's default limit (431), a transfer coding it does not know (501), an Expect other than
// 100-continue (417), an HTTP version other than 1.x (505).
func rejection(status int, reason string) (contentType string, body []byte) {
	msg := "the request could not be parsed: malformed request line, URL (such as a bad percent-escape) or header"
	switch status {
	case http.StatusRequestHeaderFieldsTooLarge:
		msg = fmt.Sprintf("request headers are larger than the server accepts (%d bytes)", http.DefaultMaxHeaderBytes)
	case http.StatusNotImplemented:
		msg = "unsupported transfer encoding"
	case http.StatusExpectationFailed:
		msg = "unsupported Expect header: only 100-continue is"
	case http.StatusBadRequest:
		if reason != "" { // the server's fixed texts ("missing required Host header", "malformed Host header"...)
			msg = "the request could not be parsed: " + reason
		}
	}
	body, _ = json.Marshal(errorEnvelope{Error: errorObject{Code: status, Message: msg,
		Metadata: map[string]any{"reason": "malformed_request"}}})
	return "application/json", body
}
