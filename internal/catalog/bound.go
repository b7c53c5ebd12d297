package catalog

import (
	"fmt"

	"github.com/modelexec/modelexec/internal/jsonscan"
)

// MaxMembers is the most object members (keys, at every depth) a body may hold before it is
// refused without being decoded. A real model input holds tens of members (a few hundred with
// long lists of objects), while a 1 MiB body can hold ~131,000 keys:
// decoding those into a tree costs tens of megabytes per request, so such a body is refused
// from a scan that keeps only what the refusal lists.
const MaxMembers = 10_000

// tooManyMembers is the refusal of a body holding more than MaxMembers members: its unknown
// top-level fields in the order sent (the first MaxViolations listed, the rest counted), or,
// when every top-level field is known, one violation saying how many members were sent. The
// values are skipped, never kept, so the memory spent is a small multiple of what is listed.
func (c *contract) tooManyMembers(raw []byte, members int) *InvalidError {
	var vs violationList
	_ = jsonscan.Members(raw, func(k string, _ []byte) bool {
		if c.root.child(k) == nil && k != idempotencyKey {
			add(&vs, []string{"body", k}, TypeExtraForbidden, "Extra inputs are not permitted")
		}
		return true
	})
	if len(vs.list) == 0 {
		vs.add(Violation{Loc: body(), Type: TypeTooLong,
			Msg: fmt.Sprintf("The body holds %d fields; no model input holds more than %d.", members, MaxMembers)})
	}
	return &InvalidError{Violations: vs.list, Omitted: vs.omitted}
}
