package catalog

import (
	"encoding/json"
	"strconv"
)

// MapURLs answers a validated input with each of its url inputs replaced by what fn returns
// for it (fn is given the input's location, as a violation names it, and its value). A runner
// that hands inputs to a model server of its own (Cog) fetches them with it first, through
// the service's SSRF-safe fetcher, so that server never dials an address a user chose. A
// language model's input has no url inputs.
func (m *Model) MapURLs(raw []byte, fn func(loc []string, url string) (string, error)) ([]byte, error) {
	if m.contract == nil {
		return raw, nil
	}
	v, err := decode(raw)
	if err != nil {
		return nil, err
	}
	if v, err = mapURLs(m.contract.root, v, body(), fn); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

func mapURLs(f *field, v any, loc []string, fn func([]string, string) (string, error)) (any, error) {
	switch f.typ {
	case tURL:
		if s, ok := v.(string); ok {
			return fn(loc, s)
		}
	case tObject:
		obj, ok := v.(map[string]any)
		if !ok {
			return v, nil
		}
		for _, c := range f.fields {
			if cv, sent := obj[c.name]; sent {
				n, err := mapURLs(c, cv, append(loc[:len(loc):len(loc)], c.name), fn)
				if err != nil {
					return nil, err
				}
				obj[c.name] = n
			}
		}
	case tArray:
		list, ok := v.([]any)
		if !ok || f.items == nil {
			return v, nil
		}
		for i, e := range list {
			n, err := mapURLs(f.items, e, append(loc[:len(loc):len(loc)], strconv.Itoa(i)), fn)
			if err != nil {
				return nil, err
			}
			list[i] = n
		}
	}
	return v, nil
}
