package upstream

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/ports"
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
	for _, n := range [...]string{"authorization", "proxy-authorization", "cookie", "cookie2"} {
		if strings.EqualFold(name, n) {
			return true
		}
	}
	for _, word := range [...]string{"key", "token", "secret", "auth", "passw", "signature", "session", "credential"} {
		if containsFold(name, word) {
			return true
		}
	}
	return false
}

// containsFold reports whether s holds word in any case (word in lower case), without the copy strings.ToLower
// makes: credentialHeader runs on every header of every chat call (ScrubChat).
func containsFold(s, word string) bool {
	for i := 0; i+len(word) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(word)], word) {
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

// ScrubChat is stream with the credentials req carried (the request the gateway sent the upstream) taken out of
// everything the upstream says in it: the text of its content, reasoning and tool calls, however the upstream cut
// it across chunks, becomes [REDACTED] where it held one, and so do the reason and body of a failure it ends with.
// An upstream that writes the key it was sent into its answer gets it neither to the caller nor to stored content.
//
// A chunk's text that ends with what may begin a credential (a proper prefix of one) holds that end back until
// the next chunk says whether it does; the answer's end (a finish reason, the stream's end or break) sends it.
// Nothing else is delayed or copied: a chunk without such an end passes as it came. Text shaped like a secret is
// left as it is: an answer may hold hashes or keys of the caller's own, which are not the gateway's.
func ScrubChat(stream ports.ChatStream, req *http.Request) ports.ChatStream {
	s := &chatScrubber{in: stream}
	s.secrets = credentials(s.own[:0], req)
	if len(s.secrets) == 0 {
		return stream
	}
	return s
}

// credentials appends to out the credentials req carried (sentSecrets) that Scrub takes out verbatim: at least
// minSecret long, and none that holds another (scrubbing the key scrubs "Bearer key"). It allocates nothing when
// out has room: it runs once a chat call, on the way to its first token.
func credentials(out []string, req *http.Request) []string {
	var found [8]string
	all := found[:0]
	for name, vv := range req.Header {
		if !credentialHeader(name) {
			continue
		}
		for _, v := range vv {
			all = append(all, v)
			if _, cred, ok := strings.Cut(v, " "); ok {
				all = append(all, strings.TrimSpace(cred))
			}
		}
	}
	if req.URL != nil && req.URL.RawQuery != "" {
		for k, vv := range req.URL.Query() {
			if credentialQueryKey(k) {
				all = append(all, vv...)
			}
		}
	}
	for i, s := range all {
		if len(s) < minSecret || slices.Contains(out, s) {
			continue
		}
		holds := false
		for j, o := range all {
			holds = holds || j != i && len(o) >= minSecret && o != s && strings.Contains(s, o)
		}
		if !holds {
			out = append(out, s)
		}
	}
	return out
}

type chatScrubber struct {
	in      ports.ChatStream
	secrets []string
	own     [2]string // where secrets begins: a call carries one credential
	// content and reasoning hold what their last text ended with that may begin a credential; tools the same for
	// the arguments of each tool call (by index) that holds some.
	content, reasoning string
	tools              map[int]string
	// end is what the stream ended with, returned once what was held has gone out.
	end error
}

func (s *chatScrubber) Next() (chat.Chunk, error) {
	if s.end != nil {
		return chat.Chunk{}, s.end
	}
	c, err := s.in.Next()
	if err != nil {
		s.end = s.failure(err)
		if c, ok := s.rest(); ok {
			return c, nil
		}
		return chat.Chunk{}, s.end
	}
	c.Content = s.pass(&s.content, c.Content)
	c.Reasoning = s.pass(&s.reasoning, c.Reasoning)
	for i := range c.ToolCalls {
		d := &c.ToolCalls[i]
		d.ID, d.Name = s.replace(d.ID), s.replace(d.Name)
		held := s.tools[d.Index]
		d.Arguments = s.pass(&held, d.Arguments)
		switch {
		case held != "" && (len(s.tools) < chat.MaxToolCalls || s.tools[d.Index] != ""):
			if s.tools == nil {
				s.tools = map[int]string{}
			}
			s.tools[d.Index] = held
		case held != "": // past as many calls as an answer has: no more held back
			d.Arguments += held
		default:
			delete(s.tools, d.Index)
		}
	}
	if len(c.Native) > 0 {
		c.Native = s.replaceNative(c.Native)
	}
	if c.FinishReason != "" { // the answer ends: what was held cannot begin a credential any more
		c.Content += s.content
		c.Reasoning += s.reasoning
		s.content, s.reasoning = "", ""
		for i, held := range s.tools {
			c.ToolCalls = append(c.ToolCalls, chat.ToolCallDelta{Index: i, Arguments: held})
		}
		clear(s.tools)
	}
	return c, nil
}

// rest is a chunk with what is still held, when anything is.
func (s *chatScrubber) rest() (chat.Chunk, bool) {
	c := chat.Chunk{Content: s.content, Reasoning: s.reasoning}
	for i, held := range s.tools {
		c.ToolCalls = append(c.ToolCalls, chat.ToolCallDelta{Index: i, Arguments: held})
	}
	s.content, s.reasoning = "", ""
	clear(s.tools)
	return c, !c.Empty()
}

// pass is what of *held and text can go on: the two with every credential replaced, less the end that may begin
// one, which it keeps in *held.
func (s *chatScrubber) pass(held *string, text string) string {
	if *held == "" && text == "" {
		return ""
	}
	t := s.replace(*held + text)
	n := s.heldBack(t)
	*held = t[len(t)-n:]
	return t[:len(t)-n]
}

// replace replaces every credential in t.
func (s *chatScrubber) replace(t string) string {
	for _, secret := range s.secrets {
		t = strings.ReplaceAll(t, secret, Redacted) // no copy when t holds none
	}
	return t
}

// replaceNative replaces every credential in an upstream's own events (chat.Chunk.Native, which a sink of the
// upstream's format sends as they came), copying them only when they hold one. A credential cut across two events
// is caught in the text the gateway reads of them (pass), not in their bytes: a sink that sends native events on
// must hold them to that (see docs/hardening.md).
func (s *chatScrubber) replaceNative(b domain.Opaque) domain.Opaque {
	for _, secret := range s.secrets {
		if bytes.Contains(b, []byte(secret)) {
			b = bytes.ReplaceAll(b, []byte(secret), []byte(Redacted))
		}
	}
	return b
}

// heldBack is the length of t's longest end that is a proper prefix of a credential.
func (s *chatScrubber) heldBack(t string) int {
	longest := 0
	for _, secret := range s.secrets {
		for i := max(len(t)-len(secret)+1, 0); i < len(t)-longest; i++ { // the ends longer than the longest yet
			j := strings.IndexByte(t[i:len(t)-longest], secret[0])
			if j < 0 {
				break
			}
			if i += j; strings.HasPrefix(secret, t[i:]) {
				longest = len(t) - i
				break
			}
		}
	}
	return longest
}

// failure is err with the credentials taken out of what an upstream failure says.
func (s *chatScrubber) failure(err error) error {
	if err == io.EOF { // the answer's end, as every stream says it
		return err
	}
	var ue *ports.UpstreamError
	if !errors.As(err, &ue) {
		return err
	}
	scrubbed := *ue
	scrubbed.Reason, scrubbed.Raw = Scrub(ue.Reason, s.secrets...), Scrub(ue.Raw, s.secrets...)
	if scrubbed == *ue {
		return err
	}
	return &scrubbed
}
