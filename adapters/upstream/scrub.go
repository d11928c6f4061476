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

// credentialHeader says a request header carries a credential: those the providers take (Authorization,
// x-api-key, xi-api-key, x-goog-api-key, api-key, cookies) and any other whose name says it holds a key, a token,
// a secret, a password, a signature or a session, so that a provider adapter added later is covered without a
// change here. The redirect policy and Scrub both read it.
func credentialHeader(name string) bool {
	n := strings.ToLower(name)
	switch n {
	case "authorization", "proxy-authorization", "cookie", "cookie2":
		return true
	}
	for _, word := range []string{"key", "token", "secret", "auth", "passw", "signature", "session", "credential"} {
		if strings.Contains(n, word) {
			return true
		}
	}
	return false
}

// credentialQueryKey says a query key carries a credential (Gemini's key=, the api_key= and token= some hosts
// take).
func credentialQueryKey(k string) bool {
	switch strings.ToLower(k) {
	case "key", "api_key", "apikey", "api-key", "token", "access_token", "auth", "secret":
		return true
	}
	return false
}

// sentSecrets are the credentials a request carried: the credential headers' values (and the credential after
// a scheme such as Bearer or Token), and the credential keys' values in its query.
func sentSecrets(req *http.Request) []string {
	if req == nil {
		return nil
	}
	var out []string
	for name, vv := range req.Header {
		if !credentialHeader(name) {
			continue
		}
		for _, v := range vv {
			out = append(out, v)
			if _, cred, ok := strings.Cut(v, " "); ok {
				out = append(out, strings.TrimSpace(cred))
			}
		}
	}
	if req.URL != nil {
		for k, vv := range req.URL.Query() {
			if credentialQueryKey(k) {
				out = append(out, vv...)
			}
		}
	}
	return out
}
