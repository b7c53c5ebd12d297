package studio

import (
	"maps"
	"slices"

	y "github.com/skyterra/y-crdt"
)

// retired is what whole-document saves dropped, over all of a document's generations: per
// client, the clock ranges a replaced document held that the saved one did not. A copy that
// holds any of them was made before a save that removed it; one that holds none may sync,
// whatever generation it last saw (its own new edits are not in any range).
type retired map[uint64][]span

// span is the clocks lo to hi-1 of one client.
type span struct{ lo, hi uint64 }

// with answers r plus what replacing a document of state vector old by one of saved drops.
func (r retired) with(old, saved map[uint64]uint64) retired {
	out := make(retired, len(r))
	for c, s := range r {
		out[c] = slices.Clone(s)
	}
	for c, hi := range old {
		if lo := saved[c]; hi > lo {
			out[c] = append(out[c], span{lo, hi})
		}
	}
	return out
}

// holds reports whether a copy of state vector sv holds a dropped item: for a client, a clock
// past the start of one of its dropped ranges.
func (r retired) holds(sv map[uint64]uint64) bool {
	for c, clock := range sv {
		for _, s := range r[c] {
			if clock > s.lo {
				return true
			}
		}
	}
	return false
}

// written reports whether update (one that passed Validate) holds a struct at a clock of a
// dropped range: it was made from a copy older than the save that dropped it. Skips, gaps that
// hold nothing, are not content.
func (r retired) written(update []byte) bool {
	if len(r) == 0 {
		return false
	}
	found := false
	walk(update, func(client, clock uint64, _ bool, it itemInfo) string { //nolint:errcheck // validated before
		for _, s := range r[client] {
			if !it.skip && clock < s.hi && clock+it.length > s.lo {
				found = true
			}
		}
		return ""
	}, func(dsRange) {})
	return found
}

// encode writes r as varuints: the number of clients, then for each (in ascending order) its
// id, its number of ranges and each range's start and length.
func (r retired) encode() []byte {
	b := appendUint(nil, uint64(len(r)))
	for _, c := range slices.Sorted(maps.Keys(r)) {
		b = appendUint(appendUint(b, c), uint64(len(r[c])))
		for _, s := range r[c] {
			b = appendUint(appendUint(b, s.lo), s.hi-s.lo)
		}
	}
	return b
}

// decodeRetired reads what encode wrote; nothing (a document never saved whole) is empty.
func decodeRetired(b []byte) (retired, error) {
	r := &reader{b: b}
	out := retired{}
	if len(b) == 0 {
		return out, nil
	}
	for n := r.count("retired clients"); n > 0 && r.err == nil; n-- {
		c := r.uint("retired client")
		for m := r.count("retired ranges"); m > 0 && r.err == nil; m-- {
			lo := r.uint("retired start")
			out[c] = append(out[c], span{lo, lo + r.uint("retired length")})
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	return out, nil
}

// readStateVector reads an encoded state vector (one that passed ValidateStateVector).
func readStateVector(sv []byte) map[uint64]uint64 {
	r := &reader{b: sv}
	out := map[uint64]uint64{}
	for n := r.count("state vector size"); n > 0 && r.err == nil; n-- {
		c := r.uint("client id")
		out[c] = r.uint("clock")
	}
	return out
}

// stateVectorOf is doc's state vector as a map.
func stateVectorOf(doc *y.Doc) map[uint64]uint64 {
	out := map[uint64]uint64{}
	for c, clock := range y.GetStateVector(doc.Store) {
		out[uint64(c)] = uint64(clock)
	}
	return out
}
