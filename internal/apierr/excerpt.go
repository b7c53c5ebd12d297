package apierr

import "unicode/utf8"

// excerptRunes is how much of a caller's own text an answer quotes.
const excerptRunes = 64

// Excerpt is at most the first 64 characters of s, with "…" when it was cut: an answer never
// echoes what the caller sent without bound.
func Excerpt(s string) string {
	if utf8.RuneCountInString(s) <= excerptRunes {
		return s
	}
	n := 0
	for i := range s {
		if n == excerptRunes {
			return s[:i] + "…"
		}
		n++
	}
	return s
}
