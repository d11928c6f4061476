package ports

// CallInfo is what a request says about its caller beyond the body, for the generation record.
type CallInfo struct {
	RequestID string
	Origin    string
	Referer   string
	UserAgent string
	SessionID string // the X-Session-Id header; the body's session_id wins
}
