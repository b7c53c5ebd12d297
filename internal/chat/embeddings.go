package chat

import (
	"encoding/json"

	"github.com/modelexec/modelexec/internal/apierr"
)

// ParseEmbeddingsInput reads `input` of an embeddings request: a string or a list of strings.
// Missing or empty is input_required; anything else (numbers, token arrays) is input_invalid.
func ParseEmbeddingsInput(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, apierr.New(apierr.InputRequired)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if s == "" {
			return nil, apierr.Newf(apierr.InputRequired, "input is an empty string.")
		}
		return []string{s}, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, apierr.Newf(apierr.InputInvalid, "input must be a string or a list of strings.")
	}
	if len(list) == 0 {
		return nil, apierr.Newf(apierr.InputRequired, "input is an empty list.")
	}
	out := make([]string, len(list))
	for i, e := range list {
		// A null decodes into a string without complaint: only a JSON string is one.
		if len(e) == 0 || e[0] != '"' || json.Unmarshal(e, &out[i]) != nil {
			return nil, apierr.Newf(apierr.InputInvalid, "input[%d] is not a string.", i).With("index", i)
		}
	}
	return out, nil
}
