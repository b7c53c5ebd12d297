package jsonscan

import (
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// ErrNotObject is returned when the text is not one valid JSON object.
var ErrNotObject = errors.New("jsonscan: not a JSON object")

// Members calls fn for each top-level member of the JSON object b, in the order sent, with its
// key (unescaped) and its raw value (a sub-slice of b, not copied). fn returns false to stop.
// b must be valid JSON (it is checked with json.Valid first, which allocates nothing).
func Members(b []byte, fn func(key string, raw []byte) bool) error {
	if !json.Valid(b) {
		return ErrNotObject
	}
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return ErrNotObject
	}
	i++
	for {
		i = skipSpace(b, i)
		if b[i] == '}' {
			return nil
		}
		if b[i] == ',' {
			i = skipSpace(b, i+1)
		}
		end := stringEnd(b, i) // b[i] == '"'
		key, err := unquote(b[i:end])
		if err != nil {
			return ErrNotObject
		}
		i = skipSpace(b, end)
		i = skipSpace(b, i+1) // ':'
		vend := valueEnd(b, i)
		if !fn(key, b[i:vend]) {
			return nil
		}
		i = vend
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string starting at b[i] == '"'.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// valueEnd returns the index just past the value starting at b[i].
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = stringEnd(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
		j++
	}
	return j
}

// unquote returns the string a JSON string literal spells; one without escapes is converted
// directly.
func unquote(q []byte) (string, error) {
	plain := true
	for _, c := range q[1 : len(q)-1] {
		if c == '\\' || c >= utf8.RuneSelf {
			plain = false // escapes, and non-ASCII that encoding/json may rewrite (invalid UTF-8)
			break
		}
	}
	if plain {
		return string(q[1 : len(q)-1]), nil
	}
	var s string
	if err := json.Unmarshal(q, &s); err != nil {
		return "", err
	}
	return s, nil
}

// Shape is what decoding a JSON text would build, counted without building it.
type Shape struct {
	Members int // object members at every depth
	Values  int // values at every depth: objects, arrays, strings, numbers, literals (keys not counted)
	Depth   int // deepest nesting of objects and arrays; 0 for a scalar
}

// Measure counts the shape of a JSON text in one pass, allocating nothing, so that a body
// whose decoding would cost many times its size (350,000 empty objects in 1 MiB) can be
// refused before it is decoded. On text that is not JSON the counts mean nothing.
func Measure(b []byte) Shape {
	var s Shape
	depth, strs, inStr, esc, inLit := 0, 0, false, false, false
	for _, c := range b {
		switch {
		case esc:
			esc = false
		case inStr:
			switch c {
			case '\\':
				esc = true
			case '"':
				inStr = false
			}
		case c == '"':
			inStr, inLit = true, false
			strs++
		case c == '{' || c == '[':
			inLit = false
			s.Values++
			depth++
			s.Depth = max(s.Depth, depth)
		case c == '}' || c == ']':
			inLit = false
			depth--
		case c == ':':
			inLit = false
			s.Members++
		case c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r':
			inLit = false
		default: // a number, true, false or null: counted at its first byte
			if !inLit {
				s.Values++
			}
			inLit = true
		}
	}
	s.Values += strs - s.Members // every string that is not a key is a value
	return s
}
