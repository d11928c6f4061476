package generation

// Caller is who made a call, as the request said beyond what it asked for; the generation record keeps it.
type Caller struct {
	RequestID, Origin, Referer, UserAgent string
	// SessionID groups a caller's calls: the request body's session_id, or else its X-Session-Id header.
	SessionID string
	// User is the caller's own id for its end user (the body's user).
	User string
}

// WithBody completes what the headers said with what the request body says: the body's session_id wins over the
// header's, and the body names the end user.
func (c Caller) WithBody(sessionID, user string) Caller {
	if sessionID != "" {
		c.SessionID = sessionID
	}
	c.User = user
	return c
}
