package compatapi

import (
	"net/http"

	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/chat"
	"github.com/modelexec/modelexec/internal/httpapi"
)

// answerOtherKind answers a call whose idempotency key replays a job of another kind than the
// route's (DESIGN 31: a key answers the first request, whatever product, model or body is sent
// later): the first call's own answer, in the shape of its own protocol, since this route's
// cannot hold it: a chat call's as a chat.completion, an embeddings call's as the embeddings
// list (its vectors as the first call asked for them, as floats), each with its own model. A job of another product, which
// this protocol cannot show, answers in_flight or key_settled naming it (chat.KeyTaken), as
// /v1/chat does. The queue host likewise answers such a key with the first job's own document.
func answerOtherKind(w http.ResponseWriter, r *http.Request, call *chat.Call) error {
	out, err := call.Result(r.Context())
	if err != nil {
		return err
	}
	switch call.Kind {
	case catalog.KindChat:
		httpapi.WriteJSON(w, r, http.StatusOK, completionOf(out))
	case catalog.KindEmbeddings:
		httpapi.WriteJSON(w, r, http.StatusOK, embeddingsOf(out, "float"))
	default:
		return chat.KeyTaken(call.Job) // Result answers it first; kept for a kind added later
	}
	return nil
}
