package upstream

import (
	"context"
	"net/http"
)

// Fetch GETs a file a provider handed out as a plain URL (its storage or CDN), with no credential of the
// gateway's, passing a byte range through; an error status is classified as any provider's is. Its answer is
// for Download to view.
func Fetch(ctx context.Context, client *http.Client, cfg Config, rawURL, byteRange string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil || (req.URL.Scheme != "https" && req.URL.Scheme != "http") {
		return nil, Internal(err)
	}
	if byteRange != "" {
		req.Header.Set("Range", byteRange)
	}
	resp, err := Do(ctx, client, req, cfg)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		return nil, Failed(resp, ErrorBody(resp), "")
	}
	return resp, nil
}
