package catalog

import (
	"fmt"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/jsonscan"
)

// Bounds on what a body may hold before it is refused without being decoded. A real model
// input holds tens of members and values (a few hundred with long lists of objects) and nests
// a few levels deep, while a 1 MiB body can hold ~131,000 keys or ~350,000 empty objects:
// decoding those into a tree costs tens of megabytes per request, so such a body is refused
// from a scan that keeps only what the refusal lists.
const (
	MaxMembers = 10_000 // object members (keys) at every depth
	MaxValues  = 10_000 // values at every depth: objects, arrays, strings, numbers, literals
	MaxDepth   = 32     // nesting of objects and arrays

	// A language model's input is a conversation or a list of strings: the longest real one
	// (at a model's context window) holds a few thousand values.
	MaxLanguageValues = 50_000
	MaxLanguageDepth  = 64
)

// oversized says, in words, which bound a body of shape s is over; "" when it is within all.
func oversized(s jsonscan.Shape) string {
	switch {
	case s.Members > MaxMembers:
		return fmt.Sprintf("The body holds %d fields; no model input holds more than %d.", s.Members, MaxMembers)
	case s.Values > MaxValues:
		return fmt.Sprintf("The body holds %d values; no model input holds more than %d.", s.Values, MaxValues)
	case s.Depth > MaxDepth:
		return fmt.Sprintf("The body nests %d levels deep; no model input nests more than %d.", s.Depth, MaxDepth)
	}
	return ""
}

// languageOversized is the refusal of a language model's input over its bounds; nil within.
func languageOversized(raw []byte) error {
	s := jsonscan.Measure(raw)
	if e := apierr.OverBounds(s.Values, s.Depth, MaxLanguageValues, MaxLanguageDepth); e != nil {
		return e
	}
	return nil
}

// tooLarge is the refusal of a body over a bound: its unknown top-level fields in the order
// sent (the first MaxViolations listed, the rest counted), or, when every top-level field is
// known, one violation saying which bound it is over (why). The values are skipped, never
// kept, so the memory spent is a small multiple of what is listed.
func (c *contract) tooLarge(raw []byte, why string) *InvalidError {
	var vs violationList
	_ = jsonscan.Members(raw, func(k string, _ []byte) bool {
		if c.root.child(k) == nil && k != idempotencyKey {
			add(&vs, []string{"body", k}, TypeExtraForbidden, "Extra inputs are not permitted")
		}
		return true
	})
	if len(vs.list) == 0 {
		vs.add(Violation{Loc: body(), Type: TypeTooLong, Msg: why})
	}
	return &InvalidError{Violations: vs.list, Omitted: vs.omitted}
}
