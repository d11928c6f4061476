package ports

// Flusher is what every streaming sink shares: what it is given (a chunk of audio or video, a chat chunk) is
// held until Flush sends it on; an error means the caller is gone. The pipeline flushes the first piece of an
// answer at once and then before each read that may wait for the upstream, so that whatever arrived together
// leaves in one write, and nothing the gateway has is held while it waits.
type Flusher interface {
	Flush() error
}
