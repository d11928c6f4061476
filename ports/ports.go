// Package ports declares the boundaries of the hexagon: driven ports (stores, upstream providers) that adapters
// implement, and driving ports (use cases) that the app implements and the HTTP adapter calls.
// It imports only the standard library and the domain.
//
// Names say the layer: a driven store port is XStore (implemented by gormstore.XStore), a driving use-case port
// is XService (implemented by app.X), and a provider port is XProvider (implemented in adapters/upstream).
package ports

// Page selects a window of a list.
type Page struct {
	Limit, Offset int
}
