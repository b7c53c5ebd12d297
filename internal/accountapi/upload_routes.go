package accountapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/blobs"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/ratelimit"
)

// UploadProducts are the products an upload may be for (spec 01 "Job status document":
// product); the upload takes that product's write scope. The default is photo.
var UploadProducts = []string{"photo", "music", "threed", "video", "external", blobs.ChatUploadProduct}

// DefaultUploadProduct is the product of an upload that names none.
const DefaultUploadProduct = "photo"

// uploadBodyKey carries the body the scope check read, for the handler.
type uploadBodyKey struct{}

// uploadBody is the request body read once by the scope check (step 7) and handed on.
type uploadBody struct {
	raw []byte
	err error
}

// uploadRoutes registers the upload routes of the account API.
func (h *Handler) uploadRoutes(mux *http.ServeMux) {
	route := httpapi.Route{Bucket: ratelimit.Write, Scope: uploadScope}
	mux.Handle("POST /v1/uploads", h.Gate.Protect(route, h.createUpload()))
}

// uploadScope is the write scope of the product the upload is for. It reads the body (the
// check order has already admitted the request, so a bad key never makes us read it), keeps
// the bytes for the handler and puts a fresh reader back. A body that does not parse, or
// names no product, is for photo (the handler then refuses a bad body); an unknown product
// is refused here with unknown_product.
func uploadScope(r *http.Request) (auth.Requirement, error) {
	raw, err := httpapi.ReadBody(r)
	*r = *r.WithContext(context.WithValue(r.Context(), uploadBodyKey{}, &uploadBody{raw: raw, err: err}))
	r.Body = io.NopCloser(bytes.NewReader(raw))
	product := DefaultUploadProduct
	if err == nil {
		var b struct {
			Product *string `json:"product"`
		}
		if json.Unmarshal(raw, &b) == nil && b.Product != nil {
			product = *b.Product
		}
	}
	if !slices.Contains(UploadProducts, product) {
		return auth.Requirement{}, apierr.Newf(apierr.UnknownProduct, "Unknown product %q.", apierr.Excerpt(product)).
			With("allowed", UploadProducts).With("products", UploadProducts)
	}
	switch product {
	// Deprecated buckets, kept only for the keys that used them (spec 02 Versioning 5):
	// the older names that reached them, and nothing minted today.
	case "external":
		return auth.Need(auth.ExternalWrite), nil
	case "video":
		return auth.Need(auth.SvcVideoWrite), nil
	case blobs.ChatUploadProduct:
		// Files for chat: text:write's images, audio, video and documents (spec 02 Scopes).
		return auth.Need(auth.TextWrite), nil
	}
	return auth.ProductRequirement(product), nil
}

// createUpload serves POST /v1/uploads.
//
// Request: {"content_type": "image/png", "filename": "cat.png", "product": "photo"}
// (content_type required: image/png, image/jpeg or image/webp; product defaults to photo).
// A chat upload (product "chat", text:write) may also hold audio, video and documents.
// Response 201: blobs.Upload — the signed PUT link (upload_url, method, headers to send),
// the `path`, and read_url, a signed GET link that any `url` input accepts once the bytes
// are PUT. Both links are valid 15 minutes.
func (h *Handler) createUpload() http.Handler {
	return httpapi.Func(func(w http.ResponseWriter, r *http.Request) error {
		if h.Uploads == nil {
			return uploadsNotConfigured()
		}
		p := httpapi.Principal(r)
		ub, _ := r.Context().Value(uploadBodyKey{}).(*uploadBody)
		if ub == nil { // the scope check did not run (no gate scope): read it now
			raw, err := httpapi.ReadBody(r)
			ub = &uploadBody{raw: raw, err: err}
		}
		if ub.err != nil {
			return ub.err
		}
		if err := httpapi.CheckObject(ub.raw); err != nil {
			return err
		}
		var req blobs.UploadRequest
		if len(bytes.TrimSpace(ub.raw)) > 0 {
			if err := json.Unmarshal(ub.raw, &req); err != nil {
				return apierr.Newf(apierr.InvalidBody, "content_type, filename and product must be strings.").Wrap(err)
			}
		}
		if req.Product == "" {
			req.Product = DefaultUploadProduct
		}
		up, err := h.Uploads.Create(r.Context(), p.Account.ID, req)
		if err != nil {
			var ct *blobs.UnknownContentTypeError
			if errors.As(err, &ct) {
				return apierr.Newf(apierr.UnknownContentType, "content_type must be one of %s for a %s upload.", strings.Join(ct.Accepted, ", "), req.Product).
					With("accepted", ct.Accepted).With("content_type", ct.ContentType)
			}
			return err
		}
		httpapi.WriteJSON(w, r, http.StatusCreated, up)
		return nil
	})
}

// notConfigured is 503 not_configured: the route is part of the API, but this deployment was
// started without what it needs (uploads turned off, no usage reader). The answer says which.
func notConfigured(msg string) error {
	return apierr.Newf(apierr.NotConfigured, "%s", msg)
}

// uploadsNotConfigured answers both upload routes of a deployment that takes no uploaded files.
func uploadsNotConfigured() error {
	return notConfigured("Uploads are not configured on this deployment: give file inputs as URLs.")
}
