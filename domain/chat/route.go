package chat

import (
	"fmt"
	"slices"
	"strings"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/catalog"
)

// Route is the request's provider routing preferences, as the reference defines them: provider.order (try these
// providers first, in this order), provider.only and provider.ignore (keep or drop providers), and
// provider.allow_fallbacks (false: no provider beyond those ordered, or beyond the first). Providers are named
// by their slug, in any case.
type Route struct {
	Order, Only, Ignore []string
	AllowFallbacks      *bool
}

// MaxRouteProviders bounds each list of providers.
const MaxRouteProviders = 256

// check holds the routing preferences to their rules: each list of providers at most MaxRouteProviders, of
// slugs a database can store. Other preferences of the reference (sort, max_price, data_collection...) are
// accepted and not applied.
func (r Route) check() error {
	for _, l := range [...]struct {
		name string
		list []string
	}{{"order", r.Order}, {"only", r.Only}, {"ignore", r.Ignore}} {
		if len(l.list) > MaxRouteProviders {
			return domain.Invalid("provider."+l.name, fmt.Sprintf("must list at most %d providers", MaxRouteProviders))
		}
		for i, p := range l.list {
			if err := domain.CheckText(fmt.Sprintf("provider.%s[%d]", l.name, i), p); err != nil {
				return err
			}
		}
	}
	return nil
}

// Apply narrows and orders a model's endpoints: only, then ignore, then the ordered providers first (in their
// order) and the others after them in the model's order, unless fallbacks are not allowed. None left is a 404.
func (r Route) Apply(model string, eps []catalog.Endpoint) ([]catalog.Endpoint, error) {
	if len(r.Order) == 0 && len(r.Only) == 0 && len(r.Ignore) == 0 && r.AllowFallbacks == nil && len(eps) > 0 {
		return eps, nil // no preferences, as most calls: the model's endpoints as they are, with no copy
	}
	in := func(list []string, slug string) int {
		return slices.IndexFunc(list, func(s string) bool { return strings.EqualFold(s, slug) })
	}
	var kept []catalog.Endpoint
	for _, ep := range eps {
		if (len(r.Only) == 0 || in(r.Only, ep.Provider) >= 0) && in(r.Ignore, ep.Provider) < 0 {
			kept = append(kept, ep)
		}
	}
	var ordered []catalog.Endpoint
	for _, slug := range r.Order {
		for _, ep := range kept {
			if strings.EqualFold(ep.Provider, slug) && !slices.Contains(ordered, ep) {
				ordered = append(ordered, ep)
			}
		}
	}
	rest := slices.DeleteFunc(kept, func(ep catalog.Endpoint) bool { return slices.Contains(ordered, ep) })
	out := append(ordered, rest...)
	if r.AllowFallbacks != nil && !*r.AllowFallbacks {
		switch {
		case len(r.Order) > 0:
			out = ordered
		case len(out) > 1:
			out = out[:1]
		}
	}
	if len(out) == 0 {
		return nil, domain.E(domain.KindNotFound, "no_endpoint",
			fmt.Sprintf("provider: no endpoint of model %q matches the provider preferences", model)).With("field", "provider")
	}
	return out, nil
}
