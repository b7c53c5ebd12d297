package apierr

// OverBounds is the refusal of a JSON body holding more than maxValues values or nesting
// deeper than maxDepth (values and depth as jsonscan.Measure counts them): invalid_body with
// the bound it is over as limit; nil within the bounds.
func OverBounds(values, depth, maxValues, maxDepth int) *Error {
	switch {
	case values > maxValues:
		return Newf(InvalidBody, "The body holds %d JSON values; a request holds at most %d.", values, maxValues).With("limit", maxValues)
	case depth > maxDepth:
		return Newf(InvalidBody, "The body nests %d levels deep; a request nests at most %d.", depth, maxDepth).With("limit", maxDepth)
	}
	return nil
}
