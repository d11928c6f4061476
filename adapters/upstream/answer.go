package upstream

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/ports"
)

// MaxEmbeddingsAnswer bounds an embeddings answer, which is read whole: 2,048 vectors of 3,072 numbers as JSON
// text are some 130 MB, and the gateway holds no more than this of one answer.
const MaxEmbeddingsAnswer = 256 << 20

// DecodeAnswer reads a whole JSON answer of at most max bytes into v and closes it. A body that breaks off, is
// longer or is not the JSON the protocol promises is a failure another endpoint may not have.
func DecodeAnswer(resp *http.Response, max int64, v any) error {
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	switch {
	case err != nil:
		return Broke(err, resp.StatusCode)
	case int64(len(raw)) > max:
		return &ports.UpstreamError{Status: resp.StatusCode, Kind: domain.KindUpstream, Retryable: true,
			Reason: fmt.Sprintf("the provider's answer is longer than the gateway takes (%d bytes)", max)}
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return &ports.UpstreamError{Status: resp.StatusCode, Kind: domain.KindUpstream, Retryable: true,
			Reason: "the provider sent a malformed answer", Err: err}
	}
	return nil
}
