package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/modelexec/modelexec/internal/apierr"
)

// A NUL character (\u0000 in JSON) cannot be kept by PostgreSQL's text and jsonb, and is
// refused on every database alike, before anything is stored: 400 invalid_body naming the
// field that holds it.

var nulEscape = []byte(`\u0000`)

// refuseNUL answers invalid_body when a string of the JSON document b (keys included) holds a
// NUL character; nil otherwise. Only a body holding the escape is walked.
func refuseNUL(b []byte) error {
	if !bytes.Contains(b, nulEscape) {
		return nil
	}
	path, loc, found := nulPath(b)
	if !found {
		return nil // the text was an escaped backslash followed by "u0000"
	}
	msg := apierr.Excerpt(path) + " contains a NUL character (\\u0000), which cannot be stored: remove it."
	return apierr.Newf(apierr.InvalidBody, "%s", msg).With("param", path).
		WithDetail(apierr.Violation{Loc: loc, Msg: msg, Type: string(apierr.InvalidBody)})
}

// nulPath walks the JSON document b and answers the path of the first string that holds a
// NUL character, written out ("messages[0].content"; "body" for the document itself) and as
// a detail's loc (["body", "messages", "0", "content"], as the catalogue's checks name a
// field).
func nulPath(b []byte) (string, []any, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	type frame struct {
		array bool
		index int
		key   string
	}
	var stack []frame
	path := func() string {
		var sb strings.Builder
		for _, f := range stack {
			if f.array {
				sb.WriteString("[" + strconv.Itoa(f.index) + "]")
				continue
			}
			if f.key == "" {
				break // an object whose key is being read: the object is named
			}
			if sb.Len() > 0 {
				sb.WriteByte('.')
			}
			sb.WriteString(f.key)
		}
		if sb.Len() == 0 {
			return "body"
		}
		return sb.String()
	}
	loc := func() []any {
		l := []any{"body"}
		for _, f := range stack {
			switch {
			case f.array:
				l = append(l, strconv.Itoa(f.index))
			case f.key != "":
				l = append(l, f.key)
			}
		}
		return l
	}
	expectKey := func() bool { return len(stack) > 0 && !stack[len(stack)-1].array && stack[len(stack)-1].key == "" }
	// value marks the end of a value in the innermost container.
	value := func() {
		if n := len(stack); n > 0 {
			if stack[n-1].array {
				stack[n-1].index++
			} else {
				stack[n-1].key = ""
			}
		}
	}
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) || err != nil {
			return "", nil, false
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, frame{})
			case '[':
				stack = append(stack, frame{array: true})
			default:
				stack = stack[:len(stack)-1]
				value()
			}
		case string:
			if expectKey() {
				if strings.ContainsRune(t, 0) {
					return path(), loc(), true // a key: its object is named
				}
				stack[len(stack)-1].key = t
				continue
			}
			if strings.ContainsRune(t, 0) {
				return path(), loc(), true
			}
			value()
		default:
			value()
		}
	}
}
