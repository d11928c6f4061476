package upstream

import (
	"net/http"
	"regexp"
	"strings"
)

// Redacted replaces a credential in text an upstream sent.
const Redacted = "[REDACTED]"

// secretShape is text shaped like a credential: a bearer (or token, basic) credential, OpenAI- and Google-style
// keys, and long hexadecimal or base64 runs.
var secretShape = regexp.MustCompile(`(?i:\b(?:bearer|token|basic)\s+[A-Za-z0-9._~+/=-]{8,})|` +
	`\bsk-[A-Za-z0-9_-]{8,}|\bAIza[0-9A-Za-z_-]{20,}|\b[0-9A-Fa-f]{32,}\b|[A-Za-z0-9+/_-]{40,}={0,2}`)

// minSecret is the shortest credential value scrubbed verbatim: shorter ones would mangle ordinary words.
const minSecret = 8

// Scrub removes credentials from text an upstream sent, before it reaches a caller, a log line or stored
// content: the exact values in secrets (what the gateway sent the provider), then anything shaped like a secret.
func Scrub(s string, secrets ...string) string {
	for _, v := range secrets {
		if len(v) >= minSecret {
			s = strings.ReplaceAll(s, v, Redacted)
		}
	}
	return secretShape.ReplaceAllString(s, Redacted)
}

// credentialHeaders carry the gateway's credentials to providers.
var credentialHeaders = []string{"Authorization", "Proxy-Authorization", "X-Api-Key", "Xi-Api-Key", "X-Goog-Api-Key",
	"Api-Key", "Cookie"}

// sentSecrets are the credentials a request carried: the credential headers' values (and the credential after
// a scheme such as Bearer or Token), and key query parameters.
func sentSecrets(req *http.Request) []string {
	if req == nil {
		return nil
	}
	var out []string
	for _, h := range credentialHeaders {
		for _, v := range req.Header.Values(h) {
			out = append(out, v)
			if _, cred, ok := strings.Cut(v, " "); ok {
				out = append(out, strings.TrimSpace(cred))
			}
		}
	}
	if req.URL != nil {
		q := req.URL.Query()
		for _, k := range []string{"key", "api_key", "token"} {
			out = append(out, q[k]...)
		}
	}
	return out
}
