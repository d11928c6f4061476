package chat

import (
	"fmt"

	"github.com/switchboard-ai/switchboard/domain"
)

// Bounds on a request, so that one call cannot hold the gateway's memory. An inbound adapter counts the lists on a
// body's bytes before it decodes them; Validate holds the decoded request to them too, whatever made it.
const (
	MaxMessages = 10_000
	MaxParts    = 1_000
	// MaxTotalParts bounds the content parts of all the messages together (a string content is none): each part,
	// however short its JSON ({"type":"text"}), costs a Part of 88 bytes and its room in a growing list, and a
	// 10 MiB body of such parts, 1,000 a message, allocated 19 times its size. It is past every provider's bound
	// on a request's images (about 100 at Anthropic, 500 at OpenAI, 3,000 at Gemini), and one a message at
	// MaxMessages.
	MaxTotalParts = 10_000
	// MaxToolCalls bounds one message's tool calls: each, however short its JSON ("{}"), costs a ToolCall,
	// and a 10 MB list of them cost 985 MB before it was refused.
	MaxToolCalls = 1_000
	MaxTools     = 512
	MaxStops     = 4
	// MaxModels bounds the models fallback list, as the reference does.
	MaxModels = 3
	// MaxFields bounds a request body's fields, as given (a key given twice counts twice): OpenAI's request has
	// some 40 and the reference's some 50, and every other one is kept and sent on, so that a 10 MiB body of short
	// distinct ones cost 605 MB.
	MaxFields = 1_000
)

// Refusals of a list past its bound, naming it as field: what Validate gives, and what an inbound adapter gives
// when it counts the list on a body's bytes, before it decodes it.

// TooManyMessages refuses a list of no messages or more than MaxMessages.
func TooManyMessages(field string) error {
	return domain.Invalid(field, fmt.Sprintf("must hold 1 to %d messages", MaxMessages))
}

// BadContent refuses a message's content that is neither a string nor a list of at most MaxParts parts.
func BadContent(field string) error {
	return domain.Invalid(field, fmt.Sprintf("must be a string or an array of at most %d content parts", MaxParts))
}

// TooManyParts refuses a message's content whose parts take the messages past MaxTotalParts.
func TooManyParts(field string) error {
	return domain.Invalid(field, fmt.Sprintf("takes the messages past %d content parts in all", MaxTotalParts)).
		With("max_parts", MaxTotalParts)
}

// TooManyToolCalls refuses a message's tool calls past MaxToolCalls.
func TooManyToolCalls(field string) error {
	return domain.Invalid(field, fmt.Sprintf("must hold at most %d tool calls", MaxToolCalls))
}

// TooManyTools refuses tools that are no list, or more than MaxTools.
func TooManyTools(field string) error {
	return domain.Invalid(field, fmt.Sprintf("must be an array of at most %d tools", MaxTools))
}

// TooManyStops refuses stop sequences that are neither a string nor a list of at most MaxStops strings.
func TooManyStops(field string) error {
	return domain.Invalid(field, fmt.Sprintf("must be a string or an array of at most %d strings", MaxStops))
}

// TooManyModels refuses a models list past MaxModels.
func TooManyModels(field string) error {
	return domain.Invalid(field, fmt.Sprintf("must hold at most %d models", MaxModels))
}
