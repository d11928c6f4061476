package responses

import (
	"encoding/json"

	"github.com/switchboard-ai/switchboard/adapters/inbound"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/chat"
)

// aside keeps an item of a type chat has no place for as it came, with the text it carries (a custom tool call's
// input, a shell command's output, a search query: inbound.ReadCarried), but the values of its members that name or
// mark it (type, id, call_id, status) and the provider's encrypted_content; false when the input's values passed
// on hold more than inbound.MaxCarried tokens with it.
func aside(item json.RawMessage, left *int) (chat.Aside, bool) {
	c, ok := inbound.ReadCarried(item, left, ownMember)
	return chat.Aside{Raw: domain.Opaque(item), Text: c.Text, Images: c.Images, ImageBytes: c.ImageBytes}, ok
}

// ownMember reports the members of an item that name or mark it, or hold what only its provider reads.
func ownMember(member string) bool {
	switch member {
	case "type", "id", "call_id", "status", "encrypted_content":
		return true
	}
	return false
}
