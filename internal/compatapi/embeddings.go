package compatapi

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/chat"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/jobs"
)

type embeddingsRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
	User           json.RawMessage `json:"user"`
}

// dimensionsOf checks the request's dimensions against the model's vectors: a whole number
// from 1 to the model's own length; 0 when none was asked (the whole vector).
func (h *Handler) dimensionsOf(req embeddingsRequest) (int, error) {
	if req.Dimensions == nil {
		return 0, nil
	}
	native := 0
	if m, ok := h.Chat.Catalog.LanguageModel(req.Model); ok && m.Language().Kind == catalog.KindEmbeddings {
		native = m.Language().Dimensions
	}
	if d := *req.Dimensions; d < 1 || (native > 0 && d > native) {
		return 0, apierr.Newf(apierr.InvalidBody, "dimensions must be a whole number from 1 to %d for %s.", native, apierr.Excerpt(req.Model)).
			With("param", "dimensions")
	}
	return *req.Dimensions, nil
}

// shorten keeps the first d values of v and scales them back to unit length, as the protocol's
// shortened embeddings are; d 0 keeps v whole.
func shorten(v []float64, d int) []float64 {
	if d <= 0 || d >= len(v) {
		return v
	}
	v = v[:d:d]
	var sum float64
	for _, x := range v {
		sum += x * x
	}
	if sum == 0 {
		return v
	}
	out, norm := make([]float64, d), math.Sqrt(sum)
	for i, x := range v {
		out[i] = x / norm
	}
	return out
}

func (h *Handler) embeddings() handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
		var req embeddingsRequest
		if err := decode(r, &req); err != nil {
			return err
		}
		if req.EncodingFormat != "" && req.EncodingFormat != "float" && req.EncodingFormat != "base64" {
			return apierr.Newf(apierr.InvalidBody, "encoding_format must be float or base64.").With("param", "encoding_format")
		}
		if err := checkUser(req.User); err != nil {
			return err
		}
		dims, err := h.dimensionsOf(req)
		if err != nil {
			return err
		}
		texts, err := chat.ParseEmbeddingsInput(req.Input)
		if err != nil {
			return err
		}
		call, err := h.start(w, r, catalog.KindEmbeddings, chat.CallRequest{Principal: p, Model: req.Model,
			Input: catalog.EmbeddingsInput{Input: texts, Dimensions: dims}}, "input")
		if call == nil {
			return err
		}
		defer call.Close()
		out, err := call.Result(r.Context())
		if err != nil {
			return err
		}
		httpapi.WriteJSON(w, r, http.StatusOK, embeddingsOf(out, req.EncodingFormat))
		return nil
	}
}

// embeddingsOf is a settled embeddings call as the protocol's list, each vector shortened to
// the dimensions its job was asked for (jobDimensions) and encoded as asked, with its job's
// model: a replay answers the first call's vectors and model, whatever dimensions or model the
// replay names; only their encoding, a representation, is the replay's own.
func embeddingsOf(out chat.Outcome, encoding string) map[string]any {
	dims := jobDimensions(out.Job)
	data := make([]any, len(out.Embeddings))
	for i, v := range out.Embeddings {
		v = shorten(v, dims)
		var emb any = v
		if encoding == "base64" {
			emb = base64Floats(v)
		}
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": emb}
	}
	return map[string]any{"object": "list", "data": data, "model": out.Job.Model,
		"usage": map[string]any{"prompt_tokens": out.Usage.InputTokens, "total_tokens": out.Usage.InputTokens}}
}

// jobDimensions is the dimensions an embeddings job's call asked for, kept in its input; 0
// (whole vectors) when it asked for none.
func jobDimensions(j jobs.Job) int {
	var in catalog.EmbeddingsInput
	if json.Unmarshal(j.Input, &in) != nil {
		return 0
	}
	return in.Dimensions
}

// base64Floats is the protocol's base64 encoding: little-endian float32s.
func base64Floats(v []float64) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(x)))
	}
	return base64.StdEncoding.EncodeToString(b)
}
