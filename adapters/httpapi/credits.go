package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/switchboard-ai/switchboard/ports"
)

// CreditsHandler serves GET /credits.
type CreditsHandler struct{ credits ports.CreditService }

func NewCreditsHandler(c ports.CreditService) *CreditsHandler { return &CreditsHandler{credits: c} }

func (h *CreditsHandler) get(c *gin.Context) {
	total, used, err := h.credits.Credits(c.Request.Context())
	if err != nil {
		writeError(c, err)
		return
	}
	data(c, http.StatusOK, gin.H{"total_credits": usd(total), "total_usage": usd(used)})
}
