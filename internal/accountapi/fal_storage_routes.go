package accountapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/blobs"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/ratelimit"
)

// FalInitiatePath is where fal's client asks for an upload slot: fal.storage.upload(blob),
// and fal.subscribe / fal.queue.submit with a Blob anywhere in the input (the client
// uploads it first and sends its URL), POST {rest host}/storage/upload/initiate. Point the
// client's rest host at the account API (requestMiddleware rewriting https://rest.fal.ai).
const FalInitiatePath = "/storage/upload/initiate"

// falInitiateRequest is the body fal's client sends.
type falInitiateRequest struct {
	ContentType string `json:"content_type"`
	FileName    string `json:"file_name"`
	Product     string `json:"product,omitempty"` // ours, optional: whose write scope (default photo)
}

// falInitiateResponse is what fal's client reads: it PUTs the bytes to upload_url with the
// blob's Content-Type and then uses file_url as the input's URL.
type falInitiateResponse struct {
	UploadURL string `json:"upload_url"`
	FileURL   string `json:"file_url"`
	// Ours, beside fal's two: the same facts POST /v1/uploads gives.
	Path      string `json:"path"`
	ExpiresAt string `json:"expires_at"`
}

// falStorageRoutes registers fal's upload protocol. It is POST /v1/uploads under fal's
// names: the same content types (image/png, image/jpeg, image/webp), write scope of the
// product (photo unless the body names one), write bucket, and links (one PUT each, valid
// 15 minutes; the file_url is a signed read link, so it expires too, unlike fal's CDN). A
// deployment that takes no uploads answers it 503 not_configured, as it answers POST /v1/uploads.
func (h *Handler) falStorageRoutes(mux *http.ServeMux) {
	route := httpapi.Route{Bucket: ratelimit.Write, Scope: uploadScope}
	mux.Handle("POST "+FalInitiatePath, h.Gate.Protect(route, h.falInitiateUpload()))
}

func (h *Handler) falInitiateUpload() http.Handler {
	return httpapi.Func(func(w http.ResponseWriter, r *http.Request) error {
		if h.Uploads == nil {
			return uploadsNotConfigured()
		}
		p := httpapi.Principal(r)
		ub, _ := r.Context().Value(uploadBodyKey{}).(*uploadBody)
		if ub == nil {
			raw, err := httpapi.ReadBody(r)
			ub = &uploadBody{raw: raw, err: err}
		}
		if ub.err != nil {
			return ub.err
		}
		if _, err := httpapi.DecodeObject(ub.raw); err != nil {
			return err
		}
		var req falInitiateRequest
		if len(bytes.TrimSpace(ub.raw)) > 0 {
			if err := json.Unmarshal(ub.raw, &req); err != nil {
				return apierr.Newf(apierr.InvalidBody, "content_type, file_name and product must be strings.").Wrap(err)
			}
		}
		if req.Product == "" {
			req.Product = DefaultUploadProduct
		}
		up, err := h.Uploads.Create(r.Context(), p.Account.ID, blobs.UploadRequest{ContentType: req.ContentType, Filename: req.FileName, Product: req.Product})
		if err != nil {
			var ct *blobs.UnknownContentTypeError
			if errors.As(err, &ct) {
				return apierr.Newf(apierr.UnknownContentType, "content_type must be one of image/png, image/jpeg, image/webp.").
					With("accepted", ct.Accepted).With("content_type", ct.ContentType)
			}
			return err
		}
		httpapi.WriteJSON(w, r, http.StatusOK, falInitiateResponse{UploadURL: up.UploadURL, FileURL: up.ReadURL, Path: up.Path, ExpiresAt: up.ExpiresAt})
		return nil
	})
}
