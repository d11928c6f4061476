// Package ports declares the boundaries of the hexagon: driven ports (stores, upstream providers) that adapters
// implement, and driving ports (use cases) that the app implements and the HTTP adapter calls.
// It imports only the standard library and the domain.
package ports

// Page selects a window of a list.
type Page struct {
	Limit, Offset int
}
