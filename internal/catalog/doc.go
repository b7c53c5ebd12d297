// Package catalog owns the model catalogue: the nine models (addresses, products, scopes,
// states, lifecycle, engine, attribution), their input contracts, their price rules and the
// documents published about them (JSON Schema, OpenAPI 3.1, the catalogue and model rows).
//
// # Data and code
//
// The catalogue is data: catalogue.json, embedded and replaceable (Load, New, Default,
// DefaultData). Each model entry names its input contract by id ("contract"); the contracts
// themselves are one Go description of the fields (contracts.go: types, required, defaults,
// bounds, lengths, enums, patterns, nested objects and arrays). From that one description
// come both the JSON Schema (draft 2020-12) published inside the OpenAPI documents and the
// validator. A test compiles the schema with santhosh-tekuri/jsonschema/v6 and checks the
// two agree on a corpus of accepted and refused inputs.
//
// # Validation
//
// Model.Validate takes the raw body and answers the filled input (defaults applied, a
// random unsigned 32-bit seed when none is sent, masked to the model's seed range; a false
// safety.checkContent read as true; negativePrompt dropped where CFGScale ≤ 1;
// idempotency_key removed, it is the caller's). Unknown fields are refused
// (extra_forbidden) at every level except a top-level idempotency_key. Violation.Loc is a
// []string starting with "body"; array indexes are decimal strings (["body","lora","0",
// "model"]), the shape of runners.Violation. Cross-field rules (the "Rules" lists of the
// spec, DESIGN 17) are not in the schema: before the enforcement date they come back as
// Warnings (the caller answers Deprecation: @<unix> and a warnings list), from it on they
// refuse with type cross_field. M5's inputs.audio has no price and is refused with
// *NotPricedError before any rule is judged (DESIGN 16).
//
// # Prices
//
// Model.Quote is exact rational arithmetic (math/big): units = product of the counting
// expression / (N × unit scale), '+' binding tighter than '*' as published
// (width*height*steps+ultralytics.steps@28 is width × height × (steps + ultralytics.steps)
// / 28 / 1e6); below min_units billed as min_units; above max_units or outside every band's
// when → *NotPricedError; credits = ceil(units × credits_per_unit). Band limits in the file
// are exact reference values; the published figures are them rounded up to 4 decimals
// (M2 max 2048×2048×50/28/1e6 = 7.48982… → 7.4899).
//
// It must not import net/http handlers, database/sql or any store; it knows nothing of keys,
// credits held or jobs.
package catalog
