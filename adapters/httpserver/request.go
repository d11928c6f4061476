package httpserver

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/net/http/httpguts"

	"github.com/switchboard-ai/switchboard/adapters/internal/h1"
)

// readHead reads the next request's head into w's request, with its body framed on the connection's reader, as
// http.ReadRequest reads one, and refuses what net/http's server refuses, with its status. A head all in the read
// buffer, as one comes with the first read of a request, is parsed where it is; one that is not is gathered a line at
// a time as it comes, into a buffer lent for its parse (gathered). A head that a failed read cut is parsed as far as
// it came, as net/textproto reads a line at a time (dropCutLine): a malformed line before the cut is a 400; a head the
// caller ended after its request line began is a 400 too; one that ended before, or whose read failed otherwise
// (timed out, reset), is not answered. Once its reads of a head reached the bound, net/http answers 431 to whatever failed, but
// for a malformed line it found before its last read of the connection: one that ends a read buffer's worth before
// the bound is a 400 here too.
func (c *conn) readHead(w *response) *rejection {
	req := &w.request
	buf, _ := c.br.Peek(c.br.Buffered())
	n := h1.Len(buf)
	raw, rerr := buf[:max(n, 0)], error(nil)
	if n < 0 {
		scratch := gathered.Get().(*[]byte)
		raw, rerr = h1.Gather((*scratch)[:0], c.br)
		defer release(scratch, raw)
		if rerr != nil {
			raw = dropCutLine(raw, c.br.Size())
		}
	}
	tokens, err := parseRequest(raw, &w.url, req) // the head is copied: the buffers may be reused
	_, _ = c.br.Discard(max(n, 0))
	switch {
	case err == nil:
		faulty, rej := frame(req, &w.ownBody.src, c.br)
		if rej != nil {
			if c.r.remain <= 0 {
				return &rejection{status: http.StatusRequestHeaderFieldsTooLarge}
			}
			return rej
		}
		w.faultyFraming = faulty
		return check(req, tokens)
	case c.r.remain <= 0:
		early := raw[:bytes.LastIndexByte(raw[:max(len(raw)-c.br.Size(), 0)], '\n')+1]
		if _, err := parseRequest(early, &w.url, req); err != nil && err != h1.ErrCut {
			return &rejection{status: http.StatusBadRequest}
		}
		return &rejection{status: http.StatusRequestHeaderFieldsTooLarge}
	case err != h1.ErrCut, rerr == io.EOF && len(raw) > 0:
		return &rejection{status: http.StatusBadRequest}
	}
	return &rejection{} // the connection failed before the request did: not answered
}

// gathered holds the buffers that heads not all in a read buffer are gathered in, each for the time of its parse: a
// connection keeps none while it waits for its next request, where it kept the last one's (up to 64 KiB each, for
// every idle connection of a pool).
var gathered = sync.Pool{New: func() any { return new([]byte) }}

// release gives a gathered head's buffer back, but for a large one's, which is left to the collector.
func release(scratch *[]byte, raw []byte) {
	if cap(raw) > 64<<10 {
		return
	}
	*scratch = raw[:0]
	gathered.Put(scratch)
}

// dropCutLine drops the last line of a head that a failure cut, line, as net/textproto drops it: when
// bufio.Reader.ReadLine, with a buffer of size bytes, returned it in pieces that each filled the buffer, the next
// read found only the failure, which textproto returns instead of the line. (ReadLine keeps a CR that ends a full
// buffer for its next piece, where it may begin a CRLF.) A line that begins with a space or a tab is read otherwise:
// the first field's is refused, however it ends (textproto reads it only to quote it); a later one, which continues
// a field, is read without them (textproto skips them a byte at a time before it reads the rest with ReadLine, which
// finds only the failure when nothing follows them).
func dropCutLine(head []byte, size int) []byte {
	start := bytes.LastIndexByte(head, '\n') + 1
	rest := head[start:]
	if start > 0 && len(rest) > 0 && (rest[0] == ' ' || rest[0] == '\t') {
		if bytes.IndexByte(head, '\n') == start-1 {
			return head
		}
		rest = bytes.TrimLeft(rest, " \t")
	}
	for len(rest) > 0 {
		if len(rest) < size {
			return head
		}
		n := size
		if rest[n-1] == '\r' {
			n--
		}
		rest = rest[n:]
	}
	return head[:start]
}

var (
	errRequestLine = errors.New("malformed request line")
	errHosts       = errors.New("too many Host headers")
)

// parseRequest parses a request's head, raw, into req as http.ReadRequest does: the request line (method, target and
// protocol), its target as url.ParseRequestURI reads it (requestURL, into u when it can), the header fields
// (h1.Fields), Host, the Cache-Control a Pragma: no-cache implies, and Close. The head is copied once, into one
// string (h1.String), which the method, target, protocol, names and values share. tokens says whether every field's
// name is a token (textproto takes a name with a space in it, which net/http's server refuses: check).
func parseRequest(raw []byte, u *url.URL, req *http.Request) (tokens bool, err error) {
	s, fields, tokens := h1.String(raw)
	line, s, ok := h1.NextLine(s)
	if !ok {
		return false, h1.ErrCut
	}
	method, rest, ok1 := strings.Cut(line, " ")
	target, proto, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 || !httpguts.ValidHeaderFieldName(method) {
		return false, errRequestLine
	}
	major, minor, ok := http.ParseHTTPVersion(proto)
	if !ok {
		return false, errRequestLine
	}
	if len(raw) > h1.Shared { // the fields' own strings are Fields'
		method, target, proto = strings.Clone(method), strings.Clone(target), strings.Clone(proto)
	}
	if req.URL, err = requestURL(u, method, target); err != nil {
		return false, err
	}
	h, err := h1.Fields(s, fields)
	if err != nil {
		return false, err
	}
	if len(h["Host"]) > 1 {
		return false, errHosts
	}
	req.Method, req.RequestURI, req.Proto, req.ProtoMajor, req.ProtoMinor = method, target, proto, major, minor
	req.Header, req.Host = h, req.URL.Host
	if req.Host == "" {
		req.Host = get(h, "Host")
	}
	if get(h, "Pragma") == "no-cache" && !has(h, "Cache-Control") {
		h["Cache-Control"] = []string{"no-cache"}
	}
	conn := h["Connection"]
	closes := httpguts.HeaderValuesContainsToken(conn, "close")
	req.Close = major < 1 || closes || major == 1 && minor == 0 && !httpguts.HeaderValuesContainsToken(conn, "keep-alive")
	return tokens, nil
}

// requestURL is the target as url.ParseRequestURI reads it, and for CONNECT to a target that is an authority alone
// (not a path) as its Host. A path of bytes that parsing leaves as they are (no escapes, nothing it would escape), with
// a query or not, is the common case: it is parsed into u rather than into a new URL.
func requestURL(u *url.URL, method, target string) (*url.URL, error) {
	if path, query, forced, ok := plainTarget(target); ok {
		*u = url.URL{Path: path, RawQuery: query, ForceQuery: forced}
		return u, nil
	}
	authority := method == http.MethodConnect && !strings.HasPrefix(target, "/")
	raw := target
	if authority {
		raw = "http://" + target
	}
	parsed, err := url.ParseRequestURI(raw)
	if err != nil {
		return nil, err
	}
	if authority {
		parsed.Scheme = ""
	}
	return parsed, nil
}

// plainTarget splits a target in origin form into its path and query as url.ParseRequestURI does (a "?" alone at the
// end is a forced, empty query), when its path is all bytes that url.URL keeps as they are (no RawPath) and it holds
// no control byte.
func plainTarget(target string) (path, query string, forced, ok bool) {
	if !strings.HasPrefix(target, "/") {
		return "", "", false, false
	}
	path, query, found := strings.Cut(target, "?")
	forced = found && query == ""
	for i := 0; i < len(path); i++ {
		if !pathByte(path[i]) {
			return "", "", false, false
		}
	}
	for i := 0; i < len(query); i++ {
		if c := query[i]; c < ' ' || c == 0x7f {
			return "", "", false, false
		}
	}
	return path, query, forced, true
}

// pathByte says whether c is a byte url.URL neither unescapes nor escapes in a path: unreserved, or a delimiter
// allowed there ('/', ':', '@' and the sub-delimiters but '!', '\”, '(', ')' and '*', which it escapes).
func pathByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~$&+,/:;=@", c) >= 0
}

// frame reads a request's framing from its header as net/http's readTransfer does, and frames its body on br in
// body (a request without one gets NoBody, one with one a nil Body, which the caller sets): Transfer-Encoding (taken
// out of the header; ignored before HTTP/1.1; but for one "chunked" refused with 501), Content-Length (several must
// agree, and are made one; a chunked body drops it) and Trailer (the fields a chunked body's trailer declares, out of
// the header). faulty says the framing is one RFC 9112 section 6 has the connection closed after (net/http keeps it):
// a Transfer-Encoding beside a Content-Length, or in HTTP/1.0, where a proxy in front may have framed the body
// otherwise (a smuggled request is read as the next one).
func frame(req *http.Request, body *wireBody, br *bufio.Reader) (faulty bool, rej *rejection) {
	h := req.Header
	// readTransfer takes a request that says HTTP/0.0 for HTTP/1.1 (its zero value): that one is refused with 505
	// after, but what it refuses first must be the same.
	at11 := req.ProtoAtLeast(1, 1) || req.ProtoMajor == 0 && req.ProtoMinor == 0
	te, hasTE := h["Transfer-Encoding"]
	delete(h, "Transfer-Encoding")
	chunked := hasTE && at11
	if chunked && (len(te) != 1 || !h1.EqualFoldASCII(te[0], "chunked")) {
		return false, &rejection{status: http.StatusNotImplemented}
	}
	length := int64(0)
	cl := h["Content-Length"]
	faulty = hasTE && (len(cl) > 0 || !at11)
	if len(cl) > 0 {
		first := textproto.TrimString(cl[0])
		if len(cl) > 1 {
			for _, v := range cl[1:] {
				if textproto.TrimString(v) != first {
					return false, &rejection{status: http.StatusBadRequest}
				}
			}
			h["Content-Length"] = []string{first}
		}
		n, err := strconv.ParseUint(first, 10, 63)
		if err != nil {
			return false, &rejection{status: http.StatusBadRequest}
		}
		length = int64(n)
	}
	req.ContentLength, req.TransferEncoding, req.Trailer, req.Body = length, nil, nil, http.NoBody
	if chunked {
		delete(h, "Content-Length")
		trailer, ok := declaredTrailer(h)
		if !ok {
			return false, &rejection{status: http.StatusBadRequest}
		}
		req.ContentLength, req.TransferEncoding, req.Trailer = -1, []string{"chunked"}, trailer
		*body = wireBody{br: br, chunked: httputil.NewChunkedReader(br), req: req}
		req.Body = nil
	} else if length > 0 {
		*body = wireBody{br: br, length: io.LimitedReader{R: br, N: length}, req: req}
		req.Body = nil
	}
	return faulty, nil
}

// declaredTrailer takes a chunked request's Trailer fields out of its header, as the trailer's names in canonical form
// (with no values until the trailer is read); nil for none. A name that frames a message is refused.
func declaredTrailer(h http.Header) (http.Header, bool) {
	vv, ok := h["Trailer"]
	if !ok {
		return nil, true
	}
	delete(h, "Trailer")
	trailer := make(http.Header)
	for _, v := range vv {
		for _, name := range strings.Split(v, ",") {
			if name = textproto.TrimString(name); name == "" {
				continue
			}
			switch name = http.CanonicalHeaderKey(name); name {
			case "Transfer-Encoding", "Trailer", "Content-Length":
				return nil, false
			}
			trailer[name] = nil
		}
	}
	if len(trailer) == 0 {
		return nil, true
	}
	return trailer, true
}

// check makes the checks net/http's server makes of a request http.ReadRequest read, in its order: HTTP/1.x only
// (505), a Host field (but for HTTP/1.0 and CONNECT) that is a valid one, field names that are tokens (tokens, from
// parseRequest), and an Expect field that is 100-continue or none (417). It then takes the Host field out of the
// header, as http.ReadRequest does (req.Host has it).
func check(req *http.Request, tokens bool) *rejection {
	if req.ProtoMajor != 1 {
		return &rejection{http.StatusHTTPVersionNotSupported, "unsupported protocol version"}
	}
	hosts := req.Header["Host"]
	if req.ProtoAtLeast(1, 1) && len(hosts) == 0 && req.Method != http.MethodConnect {
		return &rejection{http.StatusBadRequest, "missing required Host header"}
	}
	if len(hosts) == 1 && !httpguts.ValidHostHeader(hosts[0]) {
		return &rejection{http.StatusBadRequest, "malformed Host header"}
	}
	if !tokens {
		return &rejection{http.StatusBadRequest, "invalid header name"}
	}
	if expect := get(req.Header, "Expect"); expect != "" && !expectsContinue(req) {
		return &rejection{status: http.StatusExpectationFailed}
	}
	delete(req.Header, "Host")
	return nil
}

// expectsContinue says whether the caller waits for 100 Continue before it sends the body, as net/http's server reads
// Expect.
func expectsContinue(req *http.Request) bool {
	return hasToken(get(req.Header, "Expect"), "100-continue")
}

// hasToken says whether v holds token (ASCII, in any case) between token boundaries (its start or end, a space, a
// comma or a tab), as net/http's server looks for 100-continue, close and keep-alive in the first value of Expect
// or Connection.
func hasToken(v, token string) bool {
	for at := 0; at+len(token) <= len(v); at++ {
		end := at + len(token)
		if (at == 0 || tokenBoundary(v[at-1])) && (end == len(v) || tokenBoundary(v[end])) &&
			h1.EqualFoldASCII(v[at:end], token) {
			return true
		}
	}
	return false
}

func tokenBoundary(c byte) bool { return c == ' ' || c == ',' || c == '\t' }

// wireBody is a request's body as net/http's reads it off the connection: Content-Length bytes, or chunks and then
// the trailer, whose fields go to the request's Trailer. It ends with io.EOF along with its last bytes, and a body
// the connection cut short with io.ErrUnexpectedEOF; a malformed trailer fails it for good.
type wireBody struct {
	br      *bufio.Reader
	length  io.LimitedReader // a body of Content-Length
	chunked io.Reader        // a chunked body, nil for one of Content-Length
	req     *http.Request
	sawEOF  bool
	failed  bool
}

func (b *wireBody) Read(p []byte) (int, error) {
	switch {
	case b.failed:
		return 0, http.ErrBodyReadAfterClose
	case b.sawEOF:
		return 0, io.EOF
	case b.chunked != nil:
		n, err := b.chunked.Read(p)
		if err == io.EOF {
			b.sawEOF = true
			if terr := b.readTrailer(); terr != nil {
				// Nothing may be read after a broken trailer: not the body, not a next request (golang.org/issue/12027).
				err, b.sawEOF, b.failed = terr, false, true
			}
		}
		return n, err
	}
	n, err := b.length.Read(p)
	switch {
	case err == io.EOF:
		b.sawEOF = true
		if b.length.N > 0 {
			err = io.ErrUnexpectedEOF
		}
	case err == nil && n > 0 && b.length.N == 0:
		err, b.sawEOF = io.EOF, true
	}
	return n, err
}

var errTrailerEOF = errors.New("http: unexpected EOF reading trailer")

// readTrailer reads a chunked body's trailer, as net/http's body does: an empty one (the common case), or fields
// through a blank line that must come within the read buffer, read with net/textproto.
func (b *wireBody) readTrailer() error {
	buf, err := b.br.Peek(2)
	switch {
	case bytes.Equal(buf, crlf):
		_, _ = b.br.Discard(2)
		return nil
	case len(buf) < 2:
		return errTrailerEOF
	case err != nil:
		return err
	case !blankLineAhead(b.br):
		return errors.New("http: suspiciously long trailer after chunked body")
	}
	h, err := textproto.NewReader(b.br).ReadMIMEHeader()
	if err == io.EOF {
		return errTrailerEOF
	}
	if err != nil {
		return err
	}
	if b.req.Trailer == nil {
		b.req.Trailer = http.Header(h)
		return nil
	}
	maps.Copy(b.req.Trailer, http.Header(h))
	return nil
}

var (
	crlf     = []byte("\r\n")
	crlfCRLF = []byte("\r\n\r\n")
)

// blankLineAhead says whether br holds a CRLF CRLF within its buffer's size, reading up to that far.
func blankLineAhead(br *bufio.Reader) bool {
	for n := 4; ; n++ {
		buf, err := br.Peek(n)
		if bytes.HasSuffix(buf, crlfCRLF) {
			return true
		}
		if err != nil {
			return false
		}
	}
}
