package studio

import (
	"cmp"
	"slices"

	y "github.com/skyterra/y-crdt"
)

// Deletions of text the document does not hold yet. Yjs keeps them until that text arrives,
// so that updates merge to the same document in any order. The merging library keeps them too,
// but writes them in the other update format (v2) and then reads them back as v1, which drops
// them: a deletion that arrives before what it deletes is lost. So this package keeps them for
// it, as the library's own pending deletions in format v1, which the library's next merge
// applies where it can and its encoder writes into the stored state (so a document loaded again
// keeps them).

// dsRange is a run of deleted clocks of one client.
type dsRange struct{ client, clock, length uint64 }

// deleteSet reads the delete set of a v1 update (none when it does not read).
func deleteSet(update []byte) []dsRange {
	var out []dsRange
	if walk(update, func(uint64, uint64, bool, itemInfo) string { return "" }, func(d dsRange) { out = append(out, d) }) != nil {
		return nil
	}
	return out
}

// deletesOnly is a v1 update that deletes ranges and writes nothing else (nil for none).
func deletesOnly(ranges []dsRange) []byte {
	if len(ranges) == 0 {
		return nil
	}
	slices.SortFunc(ranges, func(a, b dsRange) int {
		if a.client != b.client {
			return cmp.Compare(a.client, b.client)
		}
		return cmp.Compare(a.clock, b.clock)
	})
	b := appendUint(nil, 0) // no structs
	var clients []int       // where each client's ranges start
	for i, r := range ranges {
		if i == 0 || r.client != ranges[i-1].client {
			clients = append(clients, i)
		}
	}
	b = appendUint(b, uint64(len(clients)))
	for c, start := range clients {
		end := len(ranges)
		if c+1 < len(clients) {
			end = clients[c+1]
		}
		b = appendUint(appendUint(b, ranges[start].client), uint64(end-start))
		for _, r := range ranges[start:end] {
			b = appendUint(appendUint(b, r.clock), r.length)
		}
	}
	return b
}

// splitByState parts ranges into what the document holds (state: each client's next clock)
// and what it does not hold yet.
func splitByState(ranges []dsRange, state map[y.Number]y.Number) (held, ahead []dsRange) {
	for _, r := range ranges {
		have := uint64(state[y.Number(r.client)])
		end := r.clock + r.length
		switch {
		case r.clock >= have:
			ahead = append(ahead, r)
		case end <= have:
			held = append(held, r)
		default:
			held = append(held, dsRange{r.client, r.clock, have - r.clock})
			ahead = append(ahead, dsRange{r.client, have, end - have})
		}
	}
	return held, ahead
}

// mergeKeepingDeletes merges update into doc and keeps, as the library's pending deletions
// in v1, what the update and the deletions kept before delete that doc does not hold yet;
// what they delete that it holds now is deleted.
func mergeKeepingDeletes(doc *y.Doc, update []byte) {
	before := doc.Store.PendingDs // v1: set only here
	y.ApplyUpdate(doc, update, nil)
	if len(before) == 0 && len(doc.Store.PendingDs) == 0 {
		return // nothing was ahead of the document, before or now
	}
	doc.Store.PendingDs = nil // the library's v2 bytes, which it cannot read back
	held, ahead := splitByState(append(deleteSet(update), deleteSet(before)...), y.GetStateVector(doc.Store))
	if len(held) > 0 {
		y.ApplyUpdate(doc, deletesOnly(held), nil) // deleting again what is deleted changes nothing
	}
	doc.Store.PendingDs = deletesOnly(ahead)
}
