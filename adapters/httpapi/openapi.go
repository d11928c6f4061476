package httpapi

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
)

// openAPI is the OpenAPI 3.1 document of every route, its requests, responses and the error envelope. It is
// written by hand; a test fails when a mounted route is missing from it or it names a route that does not exist.
//
//go:embed openapi.json
var openAPI []byte

// OpenAPI is the document as served: its server URL is the configured base path.
func OpenAPI(basePath string) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		return nil, fmt.Errorf("openapi.json: %w", err)
	}
	doc["servers"] = []any{map[string]any{"url": basePath}}
	return json.Marshal(doc)
}

// Route is one mounted route: its method and its path in OpenAPI's notation (/keys/{hash}).
type Route struct{ Method, Path string }

// Routes are the routes the server mounts.
func (s *Server) Routes() []Route {
	var out []Route
	for _, r := range s.engine.Routes() {
		parts := strings.Split(r.Path, "/")
		for i, p := range parts {
			if strings.HasPrefix(p, ":") || strings.HasPrefix(p, "*") {
				parts[i] = "{" + p[1:] + "}"
			}
		}
		out = append(out, Route{Method: r.Method, Path: strings.Join(parts, "/")})
	}
	return out
}

func serveOpenAPI(doc []byte) gin.HandlerFunc {
	return func(c *gin.Context) { c.Data(http.StatusOK, "application/json", doc) }
}
