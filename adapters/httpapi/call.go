package httpapi

import (
	"github.com/gin-gonic/gin"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/generation"
)

// maxKeptHeader bounds each header kept in a generation record: headers may total 1 MB.
const maxKeptHeader = 512

// caller is what the request's headers say of the caller, for the generation record. Headers are metadata the
// caller does not choose deliberately: what a database cannot store is repaired, not refused, and a header
// longer than maxKeptHeader bytes is cut.
func caller(c *gin.Context) generation.Caller {
	header := func(name string) string {
		v := c.GetHeader(name)
		if len(v) > maxKeptHeader {
			v = v[:maxKeptHeader] // a rune cut in two is repaired below
		}
		return domain.RepairText(v)
	}
	referer := header("Http-Referer") // HTTP-Referer, in the canonical form a lookup need not make anew
	if referer == "" {
		referer = header("Referer")
	}
	origin := header("Origin")
	if origin == "" {
		origin = referer
	}
	return generation.Caller{RequestID: RequestID(c.Request.Context()), Origin: origin, Referer: referer,
		UserAgent: header("User-Agent"), SessionID: header("X-Session-Id")}
}
