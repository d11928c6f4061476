package chat

import "github.com/switchboard-ai/switchboard/domain"

// Tool is a function the model may call.
type Tool struct {
	Name, Description string
	// Parameters is the function's JSON Schema, as sent.
	Parameters domain.Opaque
	Strict     *bool
}
