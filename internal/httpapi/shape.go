package httpapi

import (
	"encoding/json"
	"errors"
	"math/big"
	"reflect"
	"strings"

	"github.com/modelexec/modelexec/internal/apierr"
)

// ShapeError turns the JSON decoder's refusal of a body into invalid_body with a message for a
// person: which field, what it must be and what was sent ("messages must be an array, not a
// string"), carrying the field as `param`. The decoder's own text names Go types and is never
// shown.
func ShapeError(err error) error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || te.Field == "" {
		return apierr.Newf(apierr.InvalidBody, "The body does not match the request shape.")
	}
	if n, ok := strings.CutPrefix(te.Value, "number "); ok && outOfRange(te.Type, n) {
		return apierr.Newf(apierr.InvalidBody, "%s is out of range: %s.", apierr.Excerpt(te.Field), apierr.Excerpt(n)).
			With("param", te.Field)
	}
	return apierr.Newf(apierr.InvalidBody, "%s must be %s, not %s.", apierr.Excerpt(te.Field), jsonKind(te.Type), jsonValueKind(te.Value)).
		With("param", te.Field)
}

// outOfRange reports whether the number n the decoder refused for t is of the right kind and
// only too large for it: a whole number for an integer, any number for a float. A number whose
// exponent is past even big.Float's is past every field's range.
func outOfRange(t reflect.Type, n string) bool {
	kind := jsonKind(t)
	if kind != "a whole number" && kind != "a number" {
		return false
	}
	f, ok := new(big.Float).SetString(n)
	return !ok || kind == "a number" || f.IsInt()
}

// jsonKind names the JSON value a Go type is decoded from.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "another kind of value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "another kind of value"
}

// valueKinds names the kinds of JSON value the decoder reports meeting.
var valueKinds = map[string]string{"string": "a string", "object": "an object", "array": "an array", "bool": "true or false"}

// jsonValueKind names the kind of JSON value the decoder met ("a string", "number 5.5", …).
func jsonValueKind(v string) string {
	if k, ok := valueKinds[v]; ok {
		return k
	}
	return apierr.Excerpt(v)
}
