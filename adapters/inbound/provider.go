package inbound

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/routing"
)

// providerWire is the reference's provider object, which every inference format shares: the routing preferences,
// and the options passed through to the providers, whose numbers are kept as written (json.Number: a float64 would
// round a long integer, and refuse 1e999 as if the whole object were malformed), checked by the domain as the
// other modalities' are. sort, max_price and the preferred cutoffs take more than one shape, each read apart.
// data_collection, zdr, enforce_distillable_text and quantizations are accepted and not applied: a self-hosted
// gateway has no such arrangements with its upstreams to choose by.
type providerWire struct {
	Order                  []string        `json:"order"`
	Only                   []string        `json:"only"`
	Ignore                 []string        `json:"ignore"`
	AllowFallbacks         *bool           `json:"allow_fallbacks"`
	RequireParameters      *bool           `json:"require_parameters"`
	Sort                   json.RawMessage `json:"sort"`
	MaxPrice               json.RawMessage `json:"max_price"`
	PreferredMaxLatency    json.RawMessage `json:"preferred_max_latency"`
	PreferredMinThroughput json.RawMessage `json:"preferred_min_throughput"`
	Options                map[string]any  `json:"options"`
}

// Provider reads a provider object (raw, present and not null) into the options passed through to the providers
// and the routing preferences, each value of the wrong shape a 400 naming it (provider.sort,
// provider.max_price.prompt...). The preferences are held to the domain's rules by the request's Validate.
func Provider(raw json.RawMessage) (map[string]any, routing.Preferences, error) {
	var w providerWire
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&w); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" && !strings.HasPrefix(te.Field, "options") {
			return nil, routing.Preferences{}, domain.Invalid("provider."+te.Field, providerShapes[strings.ToLower(te.Field)])
		}
		return nil, routing.Preferences{}, domain.Invalid("provider", "must be an object")
	}
	p := routing.Preferences{Order: w.Order, Only: w.Only, Ignore: w.Ignore, AllowFallbacks: w.AllowFallbacks,
		RequireParameters: w.RequireParameters != nil && *w.RequireParameters}
	var err error
	if p.Sort, err = sortOf(w.Sort); err != nil {
		return nil, p, err
	}
	if p.MaxPrice, err = maxPriceOf(w.MaxPrice); err != nil {
		return nil, p, err
	}
	if p.PreferredMaxLatency, err = percentilesOf("preferred_max_latency", w.PreferredMaxLatency); err != nil {
		return nil, p, err
	}
	if p.PreferredMinThroughput, err = percentilesOf("preferred_min_throughput", w.PreferredMinThroughput); err != nil {
		return nil, p, err
	}
	return w.Options, p, nil
}

// providerShapes say what each typed member of provider must be.
var providerShapes = map[string]string{
	"order": "must be an array of provider slugs", "only": "must be an array of provider slugs",
	"ignore": "must be an array of provider slugs", "allow_fallbacks": "must be a boolean",
	"require_parameters": "must be a boolean",
}

// sortOf reads sort: "price", "throughput" or "latency", or {by, partition}. partition "model" (the default) sorts
// each model's endpoints apart, and so does "none" here: each model of a models list is a call of its own.
func sortOf(raw json.RawMessage) (routing.Sort, error) {
	if IsNull(raw) {
		return routing.Configured, nil
	}
	var by string
	if json.Unmarshal(raw, &by) != nil {
		var o struct {
			By        *string `json:"by"`
			Partition *string `json:"partition"`
		}
		if json.Unmarshal(raw, &o) != nil {
			return "", domain.Invalid("provider.sort", "must be price, throughput or latency, or {by, partition}")
		}
		if o.Partition != nil && *o.Partition != "model" && *o.Partition != "none" {
			return "", domain.Invalid("provider.sort.partition", "must be model or none")
		}
		if o.By == nil {
			return routing.Configured, nil
		}
		by = *o.By
	}
	return routing.Sort(by), nil // held to the known sorts by the preferences' Check
}

// maxPriceOf reads max_price: USD per million tokens of prompt and of completion, each a number or a string of
// one, as the reference takes them. Its request, image and audio prices are checked and not applied: no endpoint
// the gateway serves is priced by the request, the image or the audio unit, so no endpoint is past them.
func maxPriceOf(raw json.RawMessage) (routing.MaxPrice, error) {
	var m routing.MaxPrice
	if IsNull(raw) {
		return m, nil
	}
	var w map[string]json.RawMessage
	if json.Unmarshal(raw, &w) != nil {
		return m, domain.Invalid("provider.max_price", "must be an object of prices: prompt, completion")
	}
	for _, f := range []struct {
		name string
		dst  **domain.Micros
	}{{"prompt", &m.Prompt}, {"completion", &m.Completion}, {"request", nil}, {"image", nil}, {"audio", nil}} {
		v, ok := w[f.name]
		if !ok || IsNull(v) {
			continue
		}
		var n json.Number
		if json.Unmarshal(v, &n) != nil {
			var s string
			if json.Unmarshal(v, &s) != nil {
				return m, domain.Invalid("provider.max_price."+f.name, "must be a price in USD")
			}
			n = json.Number(s)
		}
		price, err := domain.ParseUSD(n.String())
		if err != nil {
			return m, domain.Invalid("provider.max_price."+f.name, "must be a price in USD of at least 0, to the micro-dollar")
		}
		if f.dst != nil {
			*f.dst = &price
		}
	}
	return m, nil
}

// percentilesOf reads a preferred cutoff: a number (the median's) or {p50, p75, p90, p99}.
func percentilesOf(name string, raw json.RawMessage) (routing.Percentiles, error) {
	var p routing.Percentiles
	if IsNull(raw) {
		return p, nil
	}
	field := "provider." + name
	var median json.Number
	if json.Unmarshal(raw, &median) == nil {
		v, err := cutoff(field, median)
		p.P50 = v
		return p, err
	}
	var w map[string]json.Number
	if json.Unmarshal(raw, &w) != nil {
		return p, domain.Invalid(field, "must be a number, or an object of numbers p50, p75, p90, p99")
	}
	for _, f := range []struct {
		name string
		dst  **float64
	}{{"p50", &p.P50}, {"p75", &p.P75}, {"p90", &p.P90}, {"p99", &p.P99}} {
		if n, ok := w[f.name]; ok && n != "" {
			v, err := cutoff(field+"."+f.name, n)
			if err != nil {
				return p, err
			}
			*f.dst = v
		}
	}
	return p, nil
}

func cutoff(field string, n json.Number) (*float64, error) {
	v, err := strconv.ParseFloat(n.String(), 64)
	if err != nil || v < 0 || math.IsInf(v, 0) {
		return nil, domain.Invalid(field, "must be a number of at least 0")
	}
	return &v, nil
}
