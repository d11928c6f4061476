package fakes

import "net/http"

// video answers the videos API; until it exists it is a 404 in the provider's shape.
func (o *OpenAI) video(w http.ResponseWriter, r *http.Request, body []byte, step Step) {
	jsonError(w, 404, `{"error":{"message":"Invalid URL (`+r.Method+` `+r.URL.Path+`)","type":"invalid_request_error","param":null,"code":null}}`)
}

func (g *Gemini) video(w http.ResponseWriter, r *http.Request, body []byte, step Step) {
	jsonError(w, 404, `{"error":{"code":404,"message":"Method not found.","status":"NOT_FOUND"}}`)
}
