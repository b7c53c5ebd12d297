package catalog

import (
	"fmt"
	"math/big"
)

// The ranges of the catalogue file's figures that feed arithmetic. Seconds become a
// time.Duration (nanoseconds in int64: about 292 years at most); prices and unit bounds multiply
// into a quote of int64 credits that the ledger adds to spends and balances; token counts
// multiply into a language quote; an embeddings model's dimensions size every vector it returns.
// A file with a figure outside its range is refused when the catalogue is built, naming the
// field and the range.
const (
	MaxLimitSeconds = 366 * 24 * 60 * 60 // lifecycle.stall_ceiling_seconds and max_wait_seconds
	MaxPerUnit      = 1_000_000          // credits_per_unit, credits per 1,000 tokens
	MaxUnits        = 1_000_000          // a band's min_units and max_units
	MaxTokens       = 100_000_000        // context_window, output_limit
	MaxDimensions   = 65_536             // an embeddings model's vector length
)

// inRange refuses n outside lo..hi, naming the field and the range.
func inRange(field string, n, lo, hi int64) error {
	if n < lo || n > hi {
		return fmt.Errorf("%s: %d is out of range %d to %d", field, n, lo, hi)
	}
	return nil
}

// ratInRange refuses a decimal figure (as written in the file, s) outside 0..hi.
func ratInRange(field, s string, r *big.Rat, hi int64) error {
	if r.Sign() < 0 || r.Cmp(big.NewRat(hi, 1)) > 0 {
		return fmt.Errorf("%s: %s is out of range 0 to %d", field, s, hi)
	}
	return nil
}
