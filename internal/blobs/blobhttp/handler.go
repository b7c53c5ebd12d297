package blobhttp

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/modelexec/modelexec/internal/blobs"
)

// Handler serves {prefix}{key}?method=…&expires=…&ct=…&max=…&sig=….
type Handler struct {
	Store  blobs.Store
	Signer *blobs.Signer
	Now    func() time.Time // nil: time.Now
}

// New returns the handler; mount it so that the request path starts with the path of
// signer's public base (e.g. mux.Handle("/files/", h)).
func New(store blobs.Store, signer *blobs.Signer, now func() time.Time) *Handler {
	if now == nil {
		now = time.Now
	}
	return &Handler{Store: store, Signer: signer, Now: now}
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	base, err := url.Parse(h.Signer.Base())
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "internal", "bad signer base")
		return
	}
	key, err := blobs.KeyFromPath(r.URL.EscapedPath(), base.EscapedPath())
	if err != nil {
		writeErr(w, http.StatusNotFound, "not_found", "no such file")
		return
	}
	q, err := blobs.ParseQuery(r.URL.Query())
	if err != nil {
		writeLinkErr(w, err)
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		h.get(w, r, key, q)
	case http.MethodPut:
		h.put(w, r, key, q)
	default:
		w.Header().Set("Allow", "GET, HEAD, PUT")
		writeErr(w, http.StatusMethodNotAllowed, "method_not_allowed", "use GET or PUT")
	}
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request, key string, q blobs.Query) {
	if err := h.Signer.Verify(blobs.Request{Method: r.Method, Key: key, Query: q}, h.Now()); err != nil {
		writeLinkErr(w, err)
		return
	}
	rc, info, err := h.Store.Open(r.Context(), key)
	if errors.Is(err, blobs.ErrNotFound) {
		writeErr(w, http.StatusNotFound, "not_found", "no such file")
		return
	}
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "internal", "could not read the file")
		return
	}
	defer rc.Close()
	ct := info.ContentType
	if ct == "" {
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Content-Length", strconv.FormatInt(info.Size, 10))
	w.Header().Set("Cache-Control", "private, max-age=900")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	_, _ = io.Copy(w, rc)
}

func (h *Handler) put(w http.ResponseWriter, r *http.Request, key string, q blobs.Query) {
	req := blobs.Request{Method: r.Method, Key: key, ContentType: r.Header.Get("Content-Type"), Size: r.ContentLength, Query: q}
	if err := h.Signer.Verify(req, h.Now()); err != nil {
		writeLinkErr(w, err)
		return
	}
	// The declared length passed; cap the body at the signed maximum anyway (chunked bodies).
	body := bufio.NewReaderSize(http.MaxBytesReader(w, r.Body, q.MaxBytes), blobs.SniffLen)
	head, err := body.Peek(blobs.SniffLen)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		writeLinkErr(w, blobs.ErrLinkTooLarge)
		return
	}
	if !blobs.BytesMatchType(q.ContentType, head) {
		writeLinkErr(w, blobs.ErrBytesNotDeclaredType)
		return
	}
	// Create, not Put: one file per link. A PUT that fails (too large, cut off) stores
	// nothing, so the link stays usable for a retry until one lands.
	info, err := h.Store.Create(r.Context(), key, q.ContentType, body)
	if errors.Is(err, blobs.ErrExists) {
		writeLinkErr(w, blobs.ErrLinkUsed)
		return
	}
	if errors.As(err, &mbe) {
		writeLinkErr(w, blobs.ErrLinkTooLarge)
		return
	}
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "internal", "could not store the file")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "file", "path": key, "content_type": info.ContentType, "bytes": info.Size})
}

func writeLinkErr(w http.ResponseWriter, err error) {
	var le *blobs.LinkError
	if !errors.As(err, &le) {
		writeErr(w, http.StatusForbidden, "signature_invalid", "invalid signed link")
		return
	}
	status := http.StatusForbidden
	switch le {
	case blobs.ErrLinkMethod:
		status = http.StatusMethodNotAllowed
	case blobs.ErrLinkContentType:
		status = http.StatusUnsupportedMediaType
	case blobs.ErrLinkTooLarge:
		status = http.StatusRequestEntityTooLarge
	case blobs.ErrLinkUsed:
		status = http.StatusConflict
	case blobs.ErrBytesNotDeclaredType:
		status = http.StatusBadRequest
	}
	writeErr(w, status, le.Code, le.Reason)
}

func writeErr(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("x-should-retry", "false")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": code, "message": msg, "retry": "never", "charged": "no"})
}
