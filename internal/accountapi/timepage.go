package accountapi

import "time"

// timePage cuts one page from a list read newest first by a timestamp (items: up to limit+1
// read before the page's `before`), and answers the page, whether more follow, and the cursor
// of the next page (next_before): the time of the last item, or, when the item after it shares
// that microsecond, one microsecond after it with the tied items moved to the next page, so
// paging neither skips nor repeats an item. A page made entirely of one microsecond's items
// cannot be split by a timestamp: it answers the whole group (group reads up to maxTieGroup+1
// items before the given time), even past limit.
func timePage[T any](items []T, limit int, at func(T) time.Time, group func(before time.Time) ([]T, error)) (page []T, more bool, next time.Time, err error) {
	if len(items) <= limit {
		return items, false, time.Time{}, nil
	}
	peek, page := items[limit], items[:limit]
	cut := at(page[len(page)-1])
	if !at(peek).Equal(cut) {
		return page, true, cut, nil
	}
	k := len(page)
	for k > 0 && at(page[k-1]).Equal(cut) {
		k--
	}
	if k > 0 { // move the tied items to the next page
		return page[:k], true, cut.Add(time.Microsecond), nil
	}
	all, err := group(cut.Add(time.Microsecond)) // the whole page is one microsecond
	if err != nil {
		return nil, false, time.Time{}, err
	}
	n := 0
	for n < len(all) && at(all[n]).Equal(cut) {
		n++
	}
	more = n < len(all) || n > maxTieGroup
	return all[:n], more, cut, nil
}
