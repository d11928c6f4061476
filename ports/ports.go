// Package ports declares the boundaries of the hexagon: driven ports (stores, upstream providers) that adapters
// implement, and driving ports (use cases) that the app implements and the HTTP adapter calls.
// It imports only the standard library and the domain.
//
// Names say the layer: a driven store port is XStore (implemented by gormstore.XStore), a driving use-case port
// is XService (implemented by app.X), and a provider port is XProvider (implemented in adapters/upstream).
package ports

import "github.com/switchboard-ai/switchboard/domain"

// Reservation is a budget's answer to a hold of an amount against it (a key's limit, the credits, a guardrail's
// budget): Held when the amount fitted and is held; otherwise Left is what the budget had for it — its limit less
// what was spent and what calls in flight hold, 0 when nothing — for the refusal to say.
type Reservation struct {
	Held bool
	Left domain.Micros
}

// Page selects a window of a list.
type Page struct {
	Limit, Offset int
}
