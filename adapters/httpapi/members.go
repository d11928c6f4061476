package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/ports"
)

// MembersHandler serves /organization/members.
type MembersHandler struct{ members ports.MemberService }

func NewMembersHandler(m ports.MemberService) *MembersHandler { return &MembersHandler{members: m} }

type memberResp struct {
	ID        string  `json:"id"`
	Email     string  `json:"email"`
	FirstName *string `json:"first_name"`
	LastName  *string `json:"last_name"`
	Role      string  `json:"role"`
	CreatedAt string  `json:"created_at"`
}

func toMember(m account.Member) memberResp {
	return memberResp{ID: m.ID, Email: m.Email, FirstName: m.FirstName, LastName: m.LastName, Role: string(m.Role),
		CreatedAt: timestamp(m.CreatedAt)}
}

func (h *MembersHandler) list(c *gin.Context) {
	listPage(c, func(p ports.Page) ([]account.Member, int, error) {
		return h.members.ListMembers(c.Request.Context(), p)
	}, toMember)
}

type createMemberReq struct {
	Email     *string `json:"email"`
	FirstName *string `json:"first_name"`
	LastName  *string `json:"last_name"`
	Role      *string `json:"role"`
}

func (h *MembersHandler) create(c *gin.Context) {
	var req createMemberReq
	if err := bindFields(c, &req); err != nil {
		writeError(c, err)
		return
	}
	if req.Email == nil {
		writeError(c, domain.Invalid("email", "is required"))
		return
	}
	var role account.Role
	if req.Role != nil {
		role = account.Role(*req.Role)
	}
	m, err := h.members.AddMember(c.Request.Context(), *req.Email, req.FirstName, req.LastName, role)
	if err != nil {
		writeError(c, err)
		return
	}
	data(c, http.StatusCreated, toMember(m))
}
