package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/jsonscan"
)

// MaxBody is the limit on every JSON body (spec 02 Limits): 1 MiB.
const MaxBody = 1 << 20

// Bounds on what a JSON body may hold, judged by a scan before anything is decoded: 1 MiB can
// hold ~350,000 empty objects, which cost ~30 times their text once decoded. The longest real
// body (a conversation at a model's context window) holds a few thousand values.
const (
	MaxValues = 50_000 // values at every depth: objects, arrays, strings, numbers, literals
	MaxDepth  = 64     // nesting of objects and arrays
)

// refuseOversized answers invalid_body when b holds more values or nests deeper than a body
// may; nil otherwise. It allocates nothing on a body within the bounds.
func refuseOversized(b []byte) error {
	s := jsonscan.Measure(b)
	if e := apierr.OverBounds(s.Values, s.Depth, MaxValues, MaxDepth); e != nil {
		return e
	}
	return nil
}

// refuseUnparsed answers invalid_json when b is not JSON; nil otherwise. encoding/json judges
// no text nested deeper than its own cap (10,000 levels) and calls it invalid, so a text it
// refuses is measured first: one nesting deeper than MaxDepth is refused invalid_body carrying
// limit, as it is at any depth it parses at, whether or not the rest of it would parse.
func refuseUnparsed(b []byte) error {
	if json.Valid(b) {
		return nil
	}
	if e := apierr.OverBounds(0, jsonscan.Measure(b).Depth, MaxValues, MaxDepth); e != nil {
		return e
	}
	return apierr.New(apierr.InvalidJSON)
}

func bodyTooLarge() *apierr.Error { return apierr.New(apierr.BodyTooLarge, "limit_bytes", MaxBody) }

// ReadBody reads the request body within MaxBody, checked on Content-Length first and again
// while streaming.
func ReadBody(r *http.Request) ([]byte, error) {
	if r.ContentLength > MaxBody {
		return nil, bodyTooLarge()
	}
	// A compressed body is refused by name rather than read as broken JSON. It is not
	// inflated: a few bytes sent would hold the server to a whole body's memory.
	if ce := strings.TrimSpace(r.Header.Get("Content-Encoding")); ce != "" && !strings.EqualFold(ce, "identity") {
		return nil, apierr.Newf(apierr.InvalidBody, "The body was sent with Content-Encoding %q, which this API does not take: send it uncompressed, with no Content-Encoding header.", ce)
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if errors.Is(err, errBodyTimeout) {
		return nil, apierr.Newf(apierr.InvalidBody, "The request body did not arrive in time: send the whole body promptly (the declared Content-Length must match what is sent).").Wrap(err)
	}
	if err != nil {
		return nil, apierr.New(apierr.InvalidJSON).Wrap(err)
	}
	if len(b) > MaxBody {
		return nil, bodyTooLarge()
	}
	return b, nil
}

// DecodeObject checks that b is one JSON object: invalid_json when it does not parse,
// invalid_body when it parses to something other than an object. An empty body reads as {}.
func DecodeObject(b []byte) (map[string]json.RawMessage, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return map[string]json.RawMessage{}, nil
	}
	if err := refuseUnparsed(b); err != nil {
		return nil, err
	}
	if err := refuseOversized(b); err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return nil, apierr.New(apierr.InvalidBody)
	}
	if err := refuseNUL(b); err != nil {
		return nil, err
	}
	return m, nil
}

// CheckObject is DecodeObject's verdict without the map: invalid_json when b does not parse,
// invalid_body when it is not an object or is over MaxValues or MaxDepth; an empty body
// passes. It allocates nothing, so a body of many keys costs no memory to judge.
func CheckObject(b []byte) error {
	if err := checkSyntax(b); err != nil {
		return err
	}
	return refuseOversized(b)
}

// checkSyntax is CheckObject without the bounds on values and depth.
func checkSyntax(b []byte) error {
	t := bytes.TrimSpace(b)
	if len(t) == 0 {
		return nil
	}
	if err := refuseUnparsed(t); err != nil {
		return err
	}
	if t[0] != '{' {
		return apierr.New(apierr.InvalidBody)
	}
	return refuseNUL(t)
}

// ObjectMember checks that b is a JSON object (as CheckObject does, leaving the bounds on values
// and depth to the decoder of the whole body: a model input is judged by its contract; only a
// text that does not parse is refused for its depth, see refuseUnparsed) and
// returns the value of its top-level member name (the last one when sent twice, as decoding
// into a map reads it). It walks the members in place (jsonscan), so its memory does not grow
// with how many there are.
func ObjectMember(b []byte, name string) (json.RawMessage, bool, error) {
	if err := checkSyntax(b); err != nil {
		return nil, false, err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, false, nil
	}
	var (
		found bool
		val   json.RawMessage
	)
	err := jsonscan.Members(b, func(k string, raw []byte) bool {
		if k == name {
			found, val = true, raw
		}
		return true
	})
	if err != nil {
		return nil, false, apierr.New(apierr.InvalidBody)
	}
	return val, found, nil
}

// DecodeInto reads and decodes a JSON object body into v.
func DecodeInto(r *http.Request, v any) error {
	b, err := ReadBody(r)
	if err != nil {
		return err
	}
	if err := CheckObject(b); err != nil {
		return err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			shape, _ := apierr.As(ShapeError(err))
			return shape.WithDetail(apierr.Violation{Loc: []any{"body", te.Field}, Msg: shape.Message, Type: "type_error"})
		}
		return ShapeError(err)
	}
	return nil
}
