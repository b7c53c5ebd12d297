package accountapi

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/ratelimit"
	"github.com/modelexec/modelexec/internal/studio"
)

// studioRoutes registers the studio document routes: the brief routes of spec 01, the same
// three for canvases, and the live WebSocket route of each (docs/studio.md). None spends
// credits. Nothing is registered when the Handler has no studio service.
func (h *Handler) studioRoutes(mux *http.ServeMux) {
	if h.Studio == nil {
		return
	}
	g := h.Gate
	write := httpapi.Route{Bucket: ratelimit.Write, Scope: webhookScope(auth.StudioWrite)}
	read := httpapi.Route{Bucket: ratelimit.Read, Scope: studioReadScope}
	for _, doc := range []string{"/brief", "/canvases/{canvas}"} {
		base := "/v1/studio/projects/{project}" + doc
		mux.Handle("POST "+base+"/state", g.Protect(write, h.studioState()))
		mux.Handle("POST "+base, g.Protect(write, h.studioSave()))
		mux.Handle("GET "+base, g.Protect(read, h.studioRead()))
		mux.Handle("GET "+base+"/live", h.studioLive(read))
	}
	mux.Handle("POST /v1/studio/projects/{project}/tickets", g.Protect(read, h.studioTicket()))
}

// studioReadScope: reads take studio:read, or studio:write which includes it (SCP-13).
func studioReadScope(*http.Request) (auth.Requirement, error) {
	return auth.Need(auth.StudioRead, auth.StudioWrite), nil
}

// studioKey is the document a request addresses: the caller's project, and the brief or the
// canvas of the path. An id that cannot name a project or canvas is not_found.
func studioKey(r *http.Request) (studio.Key, error) {
	return studioKeyOf(r, httpapi.Principal(r).Account.ID)
}

// studioKeyOf is studioKey for account's caller.
func studioKeyOf(r *http.Request, account string) (studio.Key, error) {
	project := r.PathValue("project")
	if err := studio.CheckID("project", project); err != nil {
		return studio.Key{}, apierr.Newf(apierr.NotFound, "No such studio project: the %s.", err)
	}
	k := studio.Key{Account: account, Project: project, Doc: studio.Brief}
	if strings.Contains(r.Pattern, "{canvas}") {
		canvas := r.PathValue("canvas")
		if err := studio.CheckID("canvas", canvas); err != nil {
			return studio.Key{}, apierr.Newf(apierr.NotFound, "No such canvas: the %s.", err)
		}
		k.Doc = studio.Canvas(canvas)
	}
	return k, nil
}

// decodeBase64 reads standard base64 (what btoa and Buffer.toString('base64') write), with or
// without padding, and the URL-safe alphabet.
func decodeBase64(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("not base64")
}

// crdtAck is the brief state acknowledgement of spec 01.
type crdtAck struct {
	Object      string `json:"object"`
	Doc         string `json:"doc"`
	Rev         int64  `json:"rev"`
	StateVector string `json:"state_vector"`
	Bytes       int    `json:"bytes"`
}

func ackBody(a studio.Ack) crdtAck {
	return crdtAck{Object: "crdt_ack", Doc: string(a.Doc), Rev: a.Rev, StateVector: base64.StdEncoding.EncodeToString(a.StateVector), Bytes: a.Bytes}
}

// crdtState is the answer of a document read: the acknowledgement's fields and the update.
// Generation is the document's generation (how many whole-document saves replaced it): a live
// client that loaded this copy connects with ?generation= set to it.
type crdtState struct {
	crdtAck
	Generation int64  `json:"generation"`
	Update     string `json:"update"`
}

func stateBody(s studio.Snapshot) crdtState {
	b := crdtState{crdtAck: ackBody(s.Ack), Generation: s.Generation, Update: base64.StdEncoding.EncodeToString(s.Update)}
	b.Object = "crdt_state"
	return b
}

// studioError turns the studio service's refusals into catalogued errors; store failures
// become internal (logged, never echoed).
func studioError(err error, what string) error {
	var me *studio.MalformedError
	var tl *studio.TooLargeError
	var ce *studio.ConflictError
	switch {
	case errors.As(err, &me):
		return apierr.Newf(apierr.InvalidBody, "%s is not a Yjs update (format v1, base64): %s at byte %d; nothing was changed.", what, me.Reason, me.Offset)
	case errors.As(err, &tl):
		return apierr.Newf(apierr.BodyTooLarge, "The %s would be %d bytes after this write, over the limit of %d bytes; nothing was changed.", tl.Doc, tl.Bytes, studio.MaxBytes).
			With("limit_bytes", studio.MaxBytes).With("bytes", tl.Bytes)
	case errors.As(err, &ce):
		cur := stateBody(ce.Current)
		return apierr.Newf(apierr.RevisionConflict, "%s.", strings.ToUpper(ce.Reason[:1])+ce.Reason[1:]).
			With("doc", cur.Doc).With("rev", cur.Rev).With("generation", cur.Generation).With("state_vector", cur.StateVector).With("bytes", cur.Bytes).With("update", cur.Update)
	case errors.Is(err, studio.ErrNotFound):
		return apierr.Newf(apierr.NotFound, "No such studio project in this account.")
	}
	return apierr.New(apierr.Internal).Wrap(err)
}

// stateBodyIn is the body of POST …/state (spec 01).
type stateBodyIn struct {
	Update *string `json:"update"`
	Seed   *bool   `json:"seed"`
}

// requiredUpdate decodes a required base64 field.
func requiredUpdate(v *string, name string) ([]byte, error) {
	if v == nil {
		return nil, apierr.Newf(apierr.InvalidBody, "%s is required: the base64 of a Yjs update.", name)
	}
	b, err := decodeBase64(*v)
	if err != nil {
		return nil, apierr.Newf(apierr.InvalidBody, "%s is not base64; send the bytes of a Yjs update in base64.", name)
	}
	return b, nil
}

func (h *Handler) studioState() http.Handler {
	return httpapi.Func(func(w http.ResponseWriter, r *http.Request) error {
		k, err := studioKey(r)
		if err != nil {
			return err
		}
		var body stateBodyIn
		if err := httpapi.DecodeInto(r, &body); err != nil {
			return err
		}
		update, err := requiredUpdate(body.Update, "update")
		if err != nil {
			return err
		}
		ack, err := h.Studio.Apply(r.Context(), studio.ApplyParams{Key: k, Update: update, Seed: body.Seed != nil && *body.Seed})
		if err != nil {
			return studioError(err, "update")
		}
		httpapi.WriteJSON(w, r, http.StatusOK, ackBody(ack))
		return nil
	})
}

// saveBodyIn is the body of the whole-document save: the document as one update, and the
// revision it was loaded at.
type saveBodyIn struct {
	Update *string          `json:"update"`
	Rev    *json.RawMessage `json:"rev"`
}

func (h *Handler) studioSave() http.Handler {
	return httpapi.Func(func(w http.ResponseWriter, r *http.Request) error {
		k, err := studioKey(r)
		if err != nil {
			return err
		}
		var body saveBodyIn
		if err := httpapi.DecodeInto(r, &body); err != nil {
			return err
		}
		state, err := requiredUpdate(body.Update, "update")
		if err != nil {
			return err
		}
		var rev int64
		if body.Rev == nil || json.Unmarshal(*body.Rev, &rev) != nil || rev < 0 {
			return apierr.Newf(apierr.InvalidBody, "rev is required: the integer revision your copy was loaded at (0 when nothing is stored).")
		}
		ack, err := h.Studio.Save(r.Context(), studio.SaveParams{Key: k, State: state, Rev: rev})
		if err != nil {
			return studioError(err, "update")
		}
		httpapi.WriteJSON(w, r, http.StatusOK, ackBody(ack))
		return nil
	})
}

func (h *Handler) studioRead() http.Handler {
	return httpapi.Func(func(w http.ResponseWriter, r *http.Request) error {
		k, err := studioKey(r)
		if err != nil {
			return err
		}
		var sv []byte
		if q := r.URL.Query(); q.Has("state_vector") {
			if sv, err = decodeBase64(q.Get("state_vector")); err == nil {
				err = studio.ValidateStateVector(sv)
			}
			if err != nil {
				return apierr.Newf(apierr.InvalidBody, "state_vector must be the base64 of a Yjs state vector (Y.encodeStateVector): %v.", err)
			}
		}
		snap, err := h.Studio.Read(r.Context(), k, sv)
		if errors.Is(err, studio.ErrNotFound) {
			return apierr.Newf(apierr.NotFound, "No studio project %s in this account.", fmt.Sprintf("%q", k.Project))
		}
		if err != nil {
			return studioError(err, "state")
		}
		httpapi.WriteJSON(w, r, http.StatusOK, stateBody(snap))
		return nil
	})
}
