package httpapi

import (
	"net/http"
	"strings"

	"github.com/modelexec/modelexec/internal/apierr"
)

// Repeated refuses an option given more than once (in where: "query" or "header") with
// values that are not the same: conflicting_options, naming it. No value is taken over the
// others; values that agree are one request.
func Repeated(where, name string, values []string, same func(x, y string) bool) error {
	for _, v := range values[min(1, len(values)):] {
		if !same(v, values[0]) {
			msg := name + " is given more than once with different values; send it once"
			return apierr.Newf(apierr.ConflictingOptions, "%s.", msg).With("options", []string{name, name}).With("option", name).
				WithDetail(apierr.Violation{Loc: []any{where, name}, Msg: msg, Type: "conflicting_options"})
		}
	}
	return nil
}

// OneHeader reads a single-valued header sent on any number of lines (to HTTP, the lines
// are one value): its value, trimmed, whether it was sent, and Repeated's refusal when lines
// disagree under same.
func OneHeader(r *http.Request, name string, same func(x, y string) bool) (string, bool, error) {
	var lines []string
	for _, l := range r.Header.Values(name) {
		lines = append(lines, strings.TrimSpace(l))
	}
	if len(lines) == 0 {
		return "", false, nil
	}
	return lines[0], true, Repeated("header", name, lines, same)
}
