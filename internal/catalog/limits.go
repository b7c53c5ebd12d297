package catalog

import (
	"errors"
	"fmt"
)

// KeepsLimits checks that next, a catalogue an operator would run, shortens no time limit that
// published (the built-in catalogue, whose limits the service's contract announces) holds for
// the same model: the longest run before a job is stopped (lifecycle.stall_ceiling_seconds) and
// the longest wait for a seat (lifecycle.max_wait_seconds). Spec 02 Versioning #4 (VER-06):
// published time limits may be lengthened, never shortened. Every shortened limit is named;
// a model the published catalogue does not hold has no published limit.
func KeepsLimits(published, next *Catalog) error {
	var errs []error
	for _, m := range next.Models() {
		p, ok := published.Model(m.Slug)
		if !ok {
			continue
		}
		for _, l := range []struct {
			name     string
			was, now int
		}{
			{"lifecycle.stall_ceiling_seconds", p.Lifecycle.StallCeilingSeconds, m.Lifecycle.StallCeilingSeconds},
			{"lifecycle.max_wait_seconds", p.Lifecycle.MaxWaitSeconds, m.Lifecycle.MaxWaitSeconds},
		} {
			if l.now < l.was {
				errs = append(errs, fmt.Errorf("model %s: %s is %d, shorter than the published %d (published time limits may be lengthened, never shortened)",
					m.Slug, l.name, l.now, l.was))
			}
		}
	}
	return errors.Join(errs...)
}
