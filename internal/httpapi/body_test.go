package httpapi

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/apierr"
)

// TestERR60_DepthPastDecoderCap: a body nesting deeper than MaxDepth is refused invalid_body
// carrying limit by every reader of a JSON body (docs/errors.md), also past encoding/json's
// own cap of 10,000 levels, where json.Valid calls it invalid: never invalid_json. A text
// that does not parse within the bound is still invalid_json. ObjectMember (the queue host,
// whose model inputs are bounded by their contract) passes a deep text that parses on.
func TestERR60_DepthPastDecoderCap(t *testing.T) {
	nest := func(d int) string { return `{"a":` + strings.Repeat("[", d-1) + strings.Repeat("]", d-1) + "}" }
	tooDeep := func(t *testing.T, what string, err error) {
		t.Helper()
		e, ok := apierr.As(err)
		if !ok || e.Code != apierr.InvalidBody || e.Fields["limit"] != MaxDepth {
			t.Fatalf("%s: %v, want invalid_body with limit %d", what, err, MaxDepth)
		}
	}
	for _, d := range []int{MaxDepth + 1, 9_999, 10_000, 10_001, 200_000} {
		body := nest(d)
		var v struct{ A any }
		tooDeep(t, fmt.Sprintf("DecodeInto at depth %d", d), DecodeInto(httptest.NewRequest("POST", "/", strings.NewReader(body)), &v))
		_, err := DecodeObject([]byte(body))
		tooDeep(t, fmt.Sprintf("DecodeObject at depth %d", d), err)
		tooDeep(t, fmt.Sprintf("CheckObject at depth %d", d), CheckObject([]byte(body)))
		_, _, err = ObjectMember([]byte(body), "a")
		if d <= 10_000 && err != nil {
			t.Fatalf("ObjectMember at depth %d: %v, want the contract to judge it", d, err)
		}
		if d > 10_000 {
			tooDeep(t, fmt.Sprintf("ObjectMember at depth %d", d), err)
		}
	}
	// Deep and cut short: refused for its depth, which it is over whatever follows.
	for _, d := range []int{MaxDepth + 1, 10_001} {
		tooDeep(t, fmt.Sprintf("CheckObject at depth %d, cut short", d), CheckObject([]byte(strings.TrimSuffix(nest(d), "]}"))))
	}
	if err := CheckObject([]byte(nest(MaxDepth)[:20])); code(t, err) != apierr.InvalidJSON {
		t.Fatalf("a shallow text cut short: %v, want invalid_json", err)
	}
}
