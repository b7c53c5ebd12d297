package catalog

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"slices"
	"time"
)

//go:embed catalogue.json
var defaultData []byte

// DefaultData returns a copy of the embedded catalogue file, for an operator (or a test)
// to start a replacement from.
func DefaultData() []byte { return bytes.Clone(defaultData) }

// State is an address's availability.
type State string

const (
	Connected State = "connected" // runs
	Described State = "described" // 501 model_not_connected
	Paused    State = "paused"    // 503 model_disabled
)

// Queue behaviours of lifecycle.queue.
const (
	QueueRefuses = "refuses" // starts at once or refuses at once
	QueueOffers  = "offers"  // may wait IN_QUEUE for a seat, charged at start
)

// Namespace is the leading word of every model address.
const Namespace = "svc-serverless"

// File is the catalogue file: what an operator replaces to change the catalogue.
type File struct {
	// CrossFieldEnforcement is when cross-field rules start refusing (RFC 3339); before it a
	// violation is warned with a Deprecation signal.
	CrossFieldEnforcement string         `json:"cross_field_enforcement"`
	Categories            []CategoryFile `json:"categories"`
	// Vendors maps a model family to its state (connected or paused); a paused vendor
	// answers vendor_disabled on every one of its addresses.
	Vendors map[string]State `json:"vendors"`
	Models  []ModelFile      `json:"models"`
	// LanguageModels are the chat and embeddings models (DESIGN 32): no queue-host address.
	LanguageModels []LanguageFile `json:"language_models,omitempty"`
}

// CategoryFile is one task a model may serve, for GET /v1/models?category=.
type CategoryFile struct {
	ID          string `json:"id"`
	Description string `json:"description"`
}

// ModelFile is one model's entry.
type ModelFile struct {
	Label           string    `json:"label"` // M1..M9
	Slug            string    `json:"slug"`
	Name            string    `json:"name"`
	Product         string    `json:"product"`   // photo, music, external, ...
	HostedBy        string    `json:"hosted_by"` // platform, or the partner's name
	Vendor          string    `json:"vendor"`
	Category        string    `json:"category"`
	State           State     `json:"state"`
	Scope           ScopeFile `json:"scope"`
	Engine          *string   `json:"engine"`
	Attribution     *string   `json:"attribution"`
	ExpectedSeconds int       `json:"expected_seconds"`
	Lifecycle       Lifecycle `json:"lifecycle"`
	Contract        string    `json:"contract"` // id of the Go input contract
	Price           PriceFile `json:"price"`
	// Runner names the built-in runner that runs the model when it is not the model's own
	// reference runner: "noop" (answers at once, for sizing and benchmarks) or the slug of
	// another built-in model. Empty: the runner of the model's slug.
	Runner string `json:"runner,omitempty"`
}

// ScopeFile is the scope an address asks for and every scope that reaches it.
type ScopeFile struct {
	Required string   `json:"required"`
	Accepted []string `json:"accepted"`
}

// Lifecycle is how a job of the model waits and how long it may run.
type Lifecycle struct {
	Queue               string `json:"queue"`                 // refuses or offers
	StallCeilingSeconds int    `json:"stall_ceiling_seconds"` // longest run before it is stopped and refunded
	MaxWaitSeconds      int    `json:"max_wait_seconds"`      // longest wait for a seat (0 when the model refuses)
}

// GiveUpAfterSeconds is the longest a job may take from submit: wait plus run.
func (l Lifecycle) GiveUpAfterSeconds() int { return l.MaxWaitSeconds + l.StallCeilingSeconds }

// PriceFile is a model's price rule as data.
type PriceFile struct {
	Unit     string     `json:"unit"`     // megapixel, second, call
	Counting string     `json:"counting"` // counting expression, exactly as published
	Bands    []BandFile `json:"bands"`
}

// BandFile is one price band. MinUnits and MaxUnits are the exact reference values (decimal
// or a/b fractions); the published figures are them rounded up to 4 decimals.
type BandFile struct {
	When           string `json:"when,omitempty"` // e.g. "width <= 1024 && height <= 1024"; empty = always
	CreditsPerUnit string `json:"credits_per_unit"`
	MinUnits       string `json:"min_units,omitempty"`
	MaxUnits       string `json:"max_units,omitempty"`
	MaxInputs      *int   `json:"max_inputs"` // most url inputs a request carries; null = unbounded
}

// Catalog is the loaded catalogue. It is read-only once built and safe for concurrent use.
type Catalog struct {
	file       File
	models     []*Model
	bySlug     map[string]*Model
	enforce    time.Time
	categories []string
	hosts      Hosts
	langs      []*Model
	langBySlug map[string]*Model
}

// Model is one catalogued model.
type Model struct {
	ModelFile
	Address     string
	contract    *contract
	price       price
	enforceFrom time.Time
	vendorState State
	lang        *Language // language models only
}

type price struct {
	PriceFile
	counting         counting
	bands            []band
	contractUnpriced func(map[string]any) string
}

type band struct {
	BandFile
	when     *condition
	perUnit  *big.Rat
	min, max *big.Rat
}

// Option adjusts a catalogue while it is built.
type Option func(*Catalog)

// WithEnforcement sets when cross-field rules start refusing, overriding the file.
func WithEnforcement(t time.Time) Option { return func(c *Catalog) { c.enforce = t } }

// Default builds the embedded catalogue.
func Default(opts ...Option) (*Catalog, error) { return Load(bytes.NewReader(defaultData), opts...) }

// Load reads a catalogue file (unknown keys refused) and builds it.
func Load(r io.Reader, opts ...Option) (*Catalog, error) {
	d := json.NewDecoder(r)
	d.DisallowUnknownFields()
	var f File
	if err := d.Decode(&f); err != nil {
		return nil, fmt.Errorf("catalog: decode: %w", err)
	}
	return New(f, opts...)
}

// New builds a catalogue from a File, checking every entry.
func New(f File, opts ...Option) (*Catalog, error) {
	c := &Catalog{file: f, bySlug: map[string]*Model{}, hosts: DefaultHosts}
	if f.CrossFieldEnforcement != "" {
		t, err := time.Parse(time.RFC3339, f.CrossFieldEnforcement)
		if err != nil {
			return nil, fmt.Errorf("catalog: cross_field_enforcement: %w", err)
		}
		c.enforce = t
	} else {
		return nil, errors.New("catalog: cross_field_enforcement is required")
	}
	for _, o := range opts {
		o(c)
	}
	for _, cat := range f.Categories {
		c.categories = append(c.categories, cat.ID)
	}
	cs := contracts()
	for i := range f.Models {
		mf := f.Models[i]
		m, err := buildModel(mf, cs, c)
		if err != nil {
			return nil, fmt.Errorf("catalog: model %q: %w", mf.Slug, err)
		}
		if _, dup := c.bySlug[m.Slug]; dup {
			return nil, fmt.Errorf("catalog: model %q listed twice", m.Slug)
		}
		c.bySlug[m.Slug] = m
		c.models = append(c.models, m)
	}
	if err := c.addLanguageModels(f.LanguageModels); err != nil {
		return nil, err
	}
	return c, nil
}

func buildModel(mf ModelFile, cs map[string]*contract, c *Catalog) (*Model, error) {
	m := &Model{ModelFile: mf, Address: Namespace + "/" + mf.Slug, enforceFrom: c.enforce}
	if mf.Slug == "" {
		return nil, errors.New("slug is required")
	}
	switch mf.State {
	case Connected, Described, Paused:
	default:
		return nil, fmt.Errorf("state %q is not connected, described or paused", mf.State)
	}
	switch mf.Lifecycle.Queue {
	case QueueRefuses, QueueOffers:
	default:
		return nil, fmt.Errorf("lifecycle.queue %q is not refuses or offers", mf.Lifecycle.Queue)
	}
	if err := inRange("lifecycle.stall_ceiling_seconds", int64(mf.Lifecycle.StallCeilingSeconds), 1, MaxLimitSeconds); err != nil {
		return nil, err
	}
	if err := inRange("lifecycle.max_wait_seconds", int64(mf.Lifecycle.MaxWaitSeconds), 0, MaxLimitSeconds); err != nil {
		return nil, err
	}
	if !slices.Contains(c.categories, mf.Category) {
		return nil, fmt.Errorf("category %q is not in categories", mf.Category)
	}
	if mf.Scope.Required == "" || !slices.Contains(mf.Scope.Accepted, mf.Scope.Required) {
		return nil, errors.New("scope.required must be one of scope.accepted")
	}
	m.vendorState = Connected
	if mf.Vendor != "" {
		if s, ok := c.file.Vendors[mf.Vendor]; ok {
			m.vendorState = s
		}
	}
	ct, ok := cs[mf.Contract]
	if !ok {
		return nil, fmt.Errorf("contract %q is unknown", mf.Contract)
	}
	m.contract = ct
	p, err := buildPrice(mf.Price)
	if err != nil {
		return nil, err
	}
	p.contractUnpriced = ct.unpriced
	m.price = p
	return m, nil
}

func buildPrice(pf PriceFile) (price, error) {
	p := price{PriceFile: pf}
	if _, ok := unitScale[pf.Unit]; !ok {
		return p, fmt.Errorf("price.unit %q is not megapixel, second or call", pf.Unit)
	}
	cnt, err := parseCounting(pf.Counting)
	if err != nil {
		return p, err
	}
	p.counting = cnt
	if len(pf.Bands) == 0 {
		return p, errors.New("price has no band")
	}
	for i, bf := range pf.Bands {
		b := band{BandFile: bf}
		if b.when, err = parseWhen(bf.When); err != nil {
			return p, err
		}
		var ok bool
		if b.perUnit, ok = new(big.Rat).SetString(bf.CreditsPerUnit); !ok || b.perUnit.Sign() < 0 {
			return p, fmt.Errorf("credits_per_unit %q is not a number", bf.CreditsPerUnit)
		}
		if err := ratInRange(fmt.Sprintf("price.bands[%d].credits_per_unit", i), bf.CreditsPerUnit, b.perUnit, MaxPerUnit); err != nil {
			return p, err
		}
		for _, x := range []struct {
			field, s string
			dst      **big.Rat
		}{{"min_units", bf.MinUnits, &b.min}, {"max_units", bf.MaxUnits, &b.max}} {
			if x.s == "" {
				continue
			}
			r, ok := new(big.Rat).SetString(x.s)
			if !ok {
				return p, fmt.Errorf("units bound %q is not a number", x.s)
			}
			if err := ratInRange(fmt.Sprintf("price.bands[%d].%s", i, x.field), x.s, r, MaxUnits); err != nil {
				return p, err
			}
			*x.dst = r
		}
		if b.min != nil && b.max != nil && b.min.Cmp(b.max) > 0 {
			return p, errors.New("min_units above max_units")
		}
		p.bands = append(p.bands, b)
	}
	return p, nil
}

// Model returns the model of a slug.
func (c *Catalog) Model(slug string) (*Model, bool) { m, ok := c.bySlug[slug]; return m, ok }

// ByAddress returns the model of an address (svc-serverless/<slug>).
func (c *Catalog) ByAddress(addr string) (*Model, bool) {
	if len(addr) <= len(Namespace)+1 || addr[:len(Namespace)+1] != Namespace+"/" {
		return nil, false
	}
	return c.Model(addr[len(Namespace)+1:])
}

// Models lists the models in catalogue order.
func (c *Catalog) Models() []*Model { return slices.Clone(c.models) }

// Categories lists the known category ids (the `categories` of invalid_category).
func (c *Catalog) Categories() []string { return slices.Clone(c.categories) }

// EnforcementDate is when cross-field rules start refusing.
func (c *Catalog) EnforcementDate() time.Time { return c.enforce }

// EnforcementDate is when this model's cross-field rules start refusing.
func (m *Model) EnforcementDate() time.Time { return m.enforceFrom }

// Refusal codes of Admit.
const (
	CodeModelNotConnected = "model_not_connected" // 501
	CodeModelDisabled     = "model_disabled"      // 503
	CodeVendorDisabled    = "vendor_disabled"     // 503
)

// StateError is a submit refused by the address's state, before any charge.
type StateError struct {
	Code    string
	Address string
}

func (e *StateError) Error() string { return e.Code + ": " + e.Address }

// Admit says whether a submit to the model may run: nil when connected, otherwise a
// *StateError with model_not_connected (described), model_disabled (paused) or
// vendor_disabled (its vendor paused).
func (m *Model) Admit() error {
	switch {
	case m.vendorState == Paused:
		return &StateError{CodeVendorDisabled, m.Address}
	case m.State == Described:
		return &StateError{CodeModelNotConnected, m.Address}
	case m.State == Paused:
		return &StateError{CodeModelDisabled, m.Address}
	}
	return nil
}

// Accepts reports whether a key holding scopes may submit to the model.
func (m *Model) Accepts(scopes []string) bool {
	for _, s := range scopes {
		if slices.Contains(m.Scope.Accepted, s) {
			return true
		}
	}
	return false
}

// InputSchema returns the model's input contract as a JSON Schema (draft 2020-12) document.
func (m *Model) InputSchema() map[string]any {
	s := m.inputSchema()
	s["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	s["$id"] = "https://modelexec.dev/schemas/" + m.Slug + ".json"
	return s
}

func (m *Model) inputSchema() map[string]any {
	s := m.contract.root.schema()
	props := s["properties"].(map[string]any)
	props[idempotencyKey] = map[string]any{
		"type":        "string",
		"pattern":     "^[A-Za-z0-9._-]{1,64}$",
		"description": "The caller's own name for the request; the same key sent twice answers the first request and does not charge again. Header Idempotency-Key is an alias.",
	}
	s["title"] = m.Label + " input: " + m.Name
	var rules []any
	for _, r := range m.contract.rules {
		rules = append(rules, r.id)
	}
	if len(rules) > 0 {
		s["x-svc-cross-field-rules"] = rules
	}
	return s
}
