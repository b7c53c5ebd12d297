package catalog

import (
	"encoding/json"
	"fmt"
	"slices"
)

// CatalogueView is the body of GET /v1/catalogue (no key needed).
type CatalogueView struct {
	Object     string           `json:"object"`     // "catalogue"
	Addresses  map[string]State `json:"addresses"`  // address → connected, described, paused
	Models     []CatalogueEntry `json:"models"`     // one row per address, catalogue order
	Categories []CategoryFile   `json:"categories"` // the tasks of ?category=
}

// CatalogueEntry is one address on the catalogue read.
type CatalogueEntry struct {
	Address  string `json:"address"`
	Label    string `json:"label"`
	Name     string `json:"name"`
	Product  string `json:"product"`
	Category string `json:"category"`
	State    State  `json:"state"`
}

// CatalogueView renders the catalogue read. A model whose vendor is paused shows paused.
func (c *Catalog) CatalogueView() CatalogueView {
	v := CatalogueView{Object: "catalogue", Addresses: map[string]State{}, Models: []CatalogueEntry{}, Categories: slices.Clone(c.file.Categories)}
	for _, m := range c.models {
		st := m.effectiveState()
		v.Addresses[m.Address] = st
		v.Models = append(v.Models, CatalogueEntry{m.Address, m.Label, m.Name, m.Product, m.Category, st})
	}
	return v
}

func (m *Model) effectiveState() State {
	if m.vendorState == Paused {
		return Paused
	}
	return m.State
}

// ModelRow is one model on GET /v1/models and the body of GET /v1/models/{address}.
type ModelRow struct {
	Object          string        `json:"object"` // "model"
	ID              string        `json:"id"`     // the address
	Slug            string        `json:"slug"`
	Label           string        `json:"label"`
	Name            string        `json:"name"`
	Product         string        `json:"product"`
	Category        string        `json:"category"`
	State           State         `json:"state"`
	HostedBy        string        `json:"hosted_by"`
	Scope           string        `json:"scope"`  // the scope the address asks for
	Scopes          []string      `json:"scopes"` // every scope that reaches it
	Engine          *string       `json:"engine"`
	Attribution     *string       `json:"attribution"`
	ExpectedSeconds int           `json:"expected_seconds"`
	Lifecycle       LifecycleView `json:"lifecycle"`
	Price           PriceView     `json:"price"`
	OpenAPI         string        `json:"openapi"` // path of the model's OpenAPI document
	// Document is the model's OpenAPI document, only with ?expand=openapi.
	Document json.RawMessage `json:"openapi_document,omitempty"`
}

// LifecycleView is lifecycle on a model row.
type LifecycleView struct {
	Queue               string `json:"queue"`
	StallCeilingSeconds int    `json:"stall_ceiling_seconds"`
	MaxWaitSeconds      int    `json:"max_wait_seconds"`
	GiveUpAfterSeconds  int    `json:"give_up_after_seconds"`
}

// PriceView is a price rule as published (x-svc-price and the model row's price).
type PriceView struct {
	Kind    string        `json:"kind"` // "quoted"
	Rule    PriceRuleView `json:"rule"`
	Metered bool          `json:"metered"`
}

// PriceRuleView is the rule of a PriceView.
type PriceRuleView struct {
	Unit     string     `json:"unit"`
	Counting string     `json:"counting"` // exactly as published, @N included
	Bands    []BandView `json:"bands"`
}

// BandView is one band as published; units rounded up to 4 decimals.
type BandView struct {
	When           *string      `json:"when"`
	CreditsPerUnit json.Number  `json:"credits_per_unit"`
	MinUnits       *json.Number `json:"min_units"`
	MaxUnits       *json.Number `json:"max_units"`
	MaxInputs      *int         `json:"max_inputs"`
}

// PriceView renders the model's price rule.
func (m *Model) PriceView() PriceView {
	r := PriceRuleView{Unit: m.price.Unit, Counting: m.price.Counting, Bands: []BandView{}}
	for _, b := range m.price.bands {
		bv := BandView{CreditsPerUnit: json.Number(trimDecimal(b.perUnit.FloatString(6))), MaxInputs: b.MaxInputs}
		if b.When != "" {
			w := b.When
			bv.When = &w
		}
		if b.min != nil {
			n := publishedNumber(b.min)
			bv.MinUnits = &n
		}
		if b.max != nil {
			n := publishedNumber(b.max)
			bv.MaxUnits = &n
		}
		r.Bands = append(r.Bands, bv)
	}
	return PriceView{Kind: "quoted", Rule: r, Metered: true}
}

// Row renders the model row.
func (m *Model) Row() ModelRow {
	l := m.Lifecycle
	return ModelRow{
		Object: "model", ID: m.Address, Slug: m.Slug, Label: m.Label, Name: m.Name,
		Product: m.Product, Category: m.Category, State: m.effectiveState(), HostedBy: m.HostedBy,
		Scope: m.Scope.Required, Scopes: slices.Clone(m.Scope.Accepted),
		Engine: m.Engine, Attribution: m.Attribution, ExpectedSeconds: m.ExpectedSeconds,
		Lifecycle: LifecycleView{l.Queue, l.StallCeilingSeconds, l.MaxWaitSeconds, l.GiveUpAfterSeconds()},
		Price:     m.PriceView(),
		OpenAPI:   "/v1/models/" + m.Address + "/openapi.json",
	}
}

// UnknownCategoryError is a ?category= naming no category: 400 invalid_category carrying
// category and categories.
type UnknownCategoryError struct {
	Category   string
	Categories []string
}

func (e *UnknownCategoryError) Error() string {
	return fmt.Sprintf("invalid_category: %q is not one of %v", e.Category, e.Categories)
}

// ModelRows lists the model rows, filtered by category when it is not empty. An unknown
// category answers *UnknownCategoryError.
func (c *Catalog) ModelRows(category string) ([]ModelRow, error) {
	if category != "" && !slices.Contains(c.categories, category) {
		return nil, &UnknownCategoryError{Category: category, Categories: c.Categories()}
	}
	rows := []ModelRow{}
	for _, m := range c.models {
		if category == "" || m.Category == category {
			rows = append(rows, m.Row())
		}
	}
	return rows, nil
}
