package catalog

import (
	"strconv"
	"strings"

	"github.com/switchboard-ai/switchboard/domain"
)

// PassThrough returns the options to forward to the provider with slug: only that provider's entry, without
// callback, webhook and URL-valued keys (which would let a caller make the gateway fetch or call arbitrary
// addresses). A non-object entry for the matched provider is a 400; other and unknown slugs are ignored.
func PassThrough(options map[string]any, slug string) (map[string]any, error) {
	raw, ok := options[slug]
	if !ok || raw == nil {
		return nil, nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, domain.Invalid("provider.options."+slug, "must be an object")
	}
	return sanitize(m), nil
}

func sanitize(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		lk := strings.ToLower(k)
		if strings.HasPrefix(lk, "callback") || strings.HasPrefix(lk, "webhook") || strings.HasSuffix(lk, "_url") || lk == "url" {
			continue
		}
		switch v := v.(type) {
		case string:
			if l := strings.ToLower(strings.TrimSpace(v)); strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://") {
				continue
			}
		case map[string]any:
			out[k] = sanitize(v)
			continue
		}
		out[k] = v
	}
	return out
}

// CheckOptions applies domain.CheckText to every key and string value of provider.options, and domain.CheckNumber
// to every number, at any depth: a 400 naming the first bad one (provider.options.slug.key, list items by index).
func CheckOptions(options map[string]any) error {
	return checkValue("provider.options", options)
}

func checkValue(field string, v any) error {
	switch v := v.(type) {
	case string:
		return domain.CheckText(field, v)
	case domain.Number:
		return domain.CheckNumber(field, v.String())
	case map[string]any:
		for k, item := range v {
			if err := domain.CheckText(field, k); err != nil {
				return err
			}
			if err := checkValue(field+"."+k, item); err != nil {
				return err
			}
		}
	case []any:
		for i, item := range v {
			if err := checkValue(field+"["+strconv.Itoa(i)+"]", item); err != nil {
				return err
			}
		}
	}
	return nil
}
