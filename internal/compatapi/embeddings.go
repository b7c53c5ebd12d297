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
)

type embeddingsRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
}

func (h *Handler) embeddings() handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
		var req embeddingsRequest
		if err := decode(r, &req); err != nil {
			return err
		}
		if req.EncodingFormat != "" && req.EncodingFormat != "float" && req.EncodingFormat != "base64" {
			return apierr.Newf(apierr.InvalidBody, "encoding_format must be float or base64.")
		}
		texts, err := chat.ParseEmbeddingsInput(req.Input)
		if err != nil {
			return err
		}
		call, err := h.Chat.Start(r.Context(), catalog.KindEmbeddings, chat.CallRequest{Principal: p, Model: req.Model,
			Input: catalog.EmbeddingsInput{Input: texts}, IdempotencyKey: idempotencyKey(r)})
		if err != nil {
			return err
		}
		defer call.Close()
		out, err := call.Result(r.Context())
		if err != nil {
			return err
		}
		data := make([]any, len(out.Embeddings))
		for i, v := range out.Embeddings {
			var emb any = v
			if req.EncodingFormat == "base64" {
				emb = base64Floats(v)
			}
			data[i] = map[string]any{"object": "embedding", "index": i, "embedding": emb}
		}
		setCallHeaders(w, call)
		httpapi.WriteJSON(w, r, http.StatusOK, map[string]any{"object": "list", "data": data, "model": req.Model,
			"usage": map[string]any{"prompt_tokens": out.Usage.InputTokens, "total_tokens": out.Usage.InputTokens}})
		return nil
	}
}

// base64Floats is the protocol's base64 encoding: little-endian float32s.
func base64Floats(v []float64) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(x)))
	}
	return base64.StdEncoding.EncodeToString(b)
}
