package accountapi

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/ratelimit"
)

// Limits of GET /v1/models (spec 02 §Limits, DESIGN 21).
const (
	// ExpandLimitDefault is how many rows ?expand=openapi answers without a limit.
	ExpandLimitDefault = 10
	// ModelsLimitMax is the largest limit GET /v1/models takes with expand=openapi (each row
	// carries a whole OpenAPI document); without it, limit is 1 to ListLimitMax like any list.
	ModelsLimitMax = 25
	// ListLimitMax is the largest limit of a list (spec 02: invalid_limit, limit 1 to 100).
	ListLimitMax = 100
)

// openapiSuffix ends the path of a model's own document.
const openapiSuffix = "/openapi.json"

// catalogRoutes registers the catalogue routes of the account API: the catalogue read needs
// no key; the model routes need a valid key and check no scope (DESIGN 21, CAT-20).
func (h *Handler) catalogRoutes(mux *http.ServeMux) {
	g := h.Gate
	read := httpapi.Route{Bucket: ratelimit.Read}
	public := httpapi.Route{Public: true, Bucket: ratelimit.Read}

	mux.Handle("GET /v1/catalogue", g.Protect(public, h.catalogue()))
	mux.Handle("GET /v1/models", g.Protect(read, h.models()))
	// The address holds a slash (svc-serverless/<slug>); the wildcard takes the rest of the
	// path and the handler splits off a trailing /openapi.json.
	mux.Handle("GET /v1/models/{address...}", g.Protect(read, h.model()))
}

func (h *Handler) catalogue() http.Handler {
	return httpapi.Func(func(w http.ResponseWriter, r *http.Request) error {
		v := h.Catalog.CatalogueView()
		for i, m := range v.Models {
			v.Models[i].State = h.shownState(m.State, m.Product)
			v.Addresses[m.Address] = v.Models[i].State
		}
		httpapi.WriteJSON(w, r, http.StatusOK, v)
		return nil
	})
}

// shownState is an address's state as the catalogue and the model rows show it: paused while
// the operator pauses its product (--disable-product), whose submits are refused before the
// model is looked at; the catalogue's own state otherwise.
func (h *Handler) shownState(st catalog.State, product string) catalog.State {
	if h.Gate != nil && h.Gate.Switches != nil && h.Gate.Switches.ProductDisabled(product) {
		return catalog.Paused
	}
	return st
}

// modelList is the body of GET /v1/models.
type modelList struct {
	Object string             `json:"object"` // "list"
	Data   []catalog.ModelRow `json:"data"`
}

func (h *Handler) models() http.Handler {
	return httpapi.Func(func(w http.ResponseWriter, r *http.Request) error {
		q := r.URL.Query()
		expand, err := parseExpand(q["expand"])
		if err != nil {
			return err
		}
		limit, err := parseModelsLimit(q["limit"], expand)
		if err != nil {
			return err
		}
		rows, err := h.Catalog.ModelRows(q.Get("category"))
		if err != nil {
			var uc *catalog.UnknownCategoryError
			if errors.As(err, &uc) {
				return apierr.New(apierr.InvalidCategory, "category", uc.Category, "categories", uc.Categories)
			}
			return err
		}
		if limit > 0 && len(rows) > limit {
			rows = rows[:limit]
		}
		for i := range rows {
			rows[i].State = h.shownState(rows[i].State, rows[i].Product)
		}
		if expand {
			for i := range rows {
				doc, err := h.Catalog.ModelDocument(rows[i].Slug)
				if err != nil {
					return err
				}
				rows[i].Document = doc
			}
		}
		httpapi.WriteJSON(w, r, http.StatusOK, modelList{Object: "list", Data: rows})
		return nil
	})
}

// parseExpand reads ?expand=: absent or empty means none; "openapi" is the only value taken
// (also as the one element of a comma list). Anything else is invalid_expand.
func parseExpand(vals []string) (bool, error) {
	expand := false
	for _, v := range vals {
		for _, part := range strings.Split(v, ",") {
			switch strings.TrimSpace(part) {
			case "":
			case "openapi":
				expand = true
			default:
				return false, apierr.New(apierr.InvalidExpand, "expand", v)
			}
		}
	}
	return expand, nil
}

// parseModelsLimit reads ?limit=: an integer 1 to 25 with expand=openapi, 1 to 100 without
// (invalid_limit carrying that max otherwise). Absent, it is 10 with expand=openapi and every
// row without; 0 means no limit.
func parseModelsLimit(vals []string, expand bool) (int, error) {
	most := ListLimitMax
	if expand {
		most = ModelsLimitMax
	}
	if len(vals) == 0 {
		if expand {
			return ExpandLimitDefault, nil
		}
		return 0, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(vals[len(vals)-1]))
	if err != nil || n < 1 || n > most || len(vals) > 1 {
		return 0, apierr.Newf(apierr.InvalidLimit, "limit must be an integer from 1 to %d.", most).With("max", most)
	}
	return n, nil
}

// model serves GET /v1/models/{address} and GET /v1/models/{address}/openapi.json.
func (h *Handler) model() http.Handler {
	return httpapi.Func(func(w http.ResponseWriter, r *http.Request) error {
		addr := r.PathValue("address")
		doc := false
		if a, ok := strings.CutSuffix(addr, openapiSuffix); ok {
			addr, doc = a, true
		}
		m, ok := h.Catalog.ByAddress(addr)
		if !ok {
			return apierr.Newf(apierr.NotFound, "No model at address %q.", addr)
		}
		if !doc {
			row := m.Row()
			row.State = h.shownState(row.State, row.Product)
			httpapi.WriteJSON(w, r, http.StatusOK, row)
			return nil
		}
		b, err := h.Catalog.ModelDocument(m.Slug)
		if err != nil {
			return err
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(b)
		return nil
	})
}
