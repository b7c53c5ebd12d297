package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/modelexec/modelexec/internal/apierr"
)

// MaxBody is the limit on every JSON body (spec 02 Limits): 1 MiB.
const MaxBody = 1 << 20

func bodyTooLarge() *apierr.Error { return apierr.New(apierr.BodyTooLarge, "limit_bytes", MaxBody) }

// ReadBody reads the request body within MaxBody, checked on Content-Length first and again
// while streaming.
func ReadBody(r *http.Request) ([]byte, error) {
	if r.ContentLength > MaxBody {
		return nil, bodyTooLarge()
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
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
	if !json.Valid(b) {
		return nil, apierr.New(apierr.InvalidJSON)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return nil, apierr.New(apierr.InvalidBody)
	}
	return m, nil
}

// DecodeInto reads and decodes a JSON object body into v.
func DecodeInto(r *http.Request, v any) error {
	b, err := ReadBody(r)
	if err != nil {
		return err
	}
	if _, err := DecodeObject(b); err != nil {
		return err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return apierr.Newf(apierr.InvalidBody, "field %s must be %s", te.Field, te.Type).WithDetail(apierr.Violation{Loc: []any{"body", te.Field}, Msg: "wrong type", Type: "type_error"})
		}
		return apierr.New(apierr.InvalidBody).Wrap(err)
	}
	return nil
}
