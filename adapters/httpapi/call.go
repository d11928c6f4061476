package httpapi

import (
	"github.com/gin-gonic/gin"

	"github.com/switchboard-ai/switchboard/domain/generation"
)

// caller is what the request's headers say of the caller, for the generation record.
func caller(c *gin.Context) generation.Caller {
	referer := c.GetHeader("HTTP-Referer")
	if referer == "" {
		referer = c.GetHeader("Referer")
	}
	origin := c.GetHeader("Origin")
	if origin == "" {
		origin = referer
	}
	return generation.Caller{RequestID: RequestID(c.Request.Context()), Origin: origin, Referer: referer,
		UserAgent: c.GetHeader("User-Agent"), SessionID: c.GetHeader("X-Session-Id")}
}
