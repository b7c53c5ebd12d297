package compatapi

import (
	"net/http"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/httpapi"
)

func modelObject(m *catalog.Model) map[string]any {
	return map[string]any{"id": m.Slug, "object": "model", "created": 0, "owned_by": "modelexec"}
}

func (h *Handler) listModels() handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
		data := []any{}
		for _, m := range h.models("") {
			data = append(data, modelObject(m))
		}
		httpapi.WriteJSON(w, r, http.StatusOK, map[string]any{"object": "list", "data": data})
		return nil
	}
}

func (h *Handler) getModel() handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
		m, ok := h.Chat.Catalog.LanguageModel(r.PathValue("model"))
		if !ok {
			return apierr.Newf(apierr.NotFound, "The model %q does not exist.", r.PathValue("model"))
		}
		httpapi.WriteJSON(w, r, http.StatusOK, modelObject(m))
		return nil
	}
}
