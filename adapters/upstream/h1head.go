package upstream

import (
	"net/http"

	"github.com/switchboard-ai/switchboard/adapters/internal/h1"
)

// readHead reads a response's head, its status line and header fields through the blank line that ends them, and
// parses it into resp (parseHead). A head all in the read buffer, as one comes with the first read of an answer, is
// parsed where it is; one that is not is gathered a line at a time as it comes (h1.Gather). A head the connection's
// failure cut is parsed as far as it came: a malformed line before the cut is the error, as net/textproto, which
// reads a line at a time, reports it; otherwise the failure is.
func (c *conn) readHead(resp *http.Response) error {
	buf, _ := c.br.Peek(c.br.Buffered())
	if n := h1.Len(buf); n >= 0 {
		err := parseHead(buf[:n], resp)
		c.br.Discard(n)
		return err
	}
	raw, rerr := h1.Gather(nil, c.br)
	if err := parseHead(raw, resp); err != h1.ErrCut {
		return err
	}
	return rerr
}

// parseHead parses a head into resp as net/http's client reads one: the status line (statusLine), then the header
// fields as textproto.Reader.ReadMIMEHeader reads them (h1.Fields). The head is copied once, into one string
// (h1.String), which the status, the names and the values share.
func parseHead(raw []byte, resp *http.Response) error {
	s, fields, _ := h1.String(raw)
	line, s, ok := h1.NextLine(s)
	if !ok {
		return h1.ErrCut
	}
	if err := statusLine(line, resp); err != nil {
		return err
	}
	h, err := h1.Fields(s, fields)
	if err != nil {
		return err
	}
	resp.Header = h
	return nil
}
