package httpapi

import (
	"github.com/gin-gonic/gin"

	"github.com/switchboard-ai/switchboard/ports"
)

// callInfo is what the request's headers say for the generation record.
func callInfo(c *gin.Context) ports.CallInfo {
	referer := c.GetHeader("HTTP-Referer")
	if referer == "" {
		referer = c.GetHeader("Referer")
	}
	origin := c.GetHeader("Origin")
	if origin == "" {
		origin = referer
	}
	return ports.CallInfo{RequestID: RequestID(c.Request.Context()), Origin: origin, Referer: referer,
		UserAgent: c.GetHeader("User-Agent"), SessionID: c.GetHeader("X-Session-Id")}
}
