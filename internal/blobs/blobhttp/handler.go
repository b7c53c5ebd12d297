package blobhttp

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/blobs"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/imagebudget"
)

// Handler serves {prefix}{key}?method=…&expires=…&ct=…&max=…&sig=….
type Handler struct {
	Store  blobs.Store
	Signer *blobs.Signer
	Now    func() time.Time // nil: time.Now
	// Verify decodes each uploaded image in full before the store keeps it.
	Verify *blobs.Verifier
}

// New returns the handler, decoding uploaded images within images (nil: a budget of
// imagebudget.Default's size for this handler alone); mount it so that the request path
// starts with the path of signer's public base (e.g. mux.Handle("/files/", h)).
func New(store blobs.Store, signer *blobs.Signer, now func() time.Time, images *imagebudget.Budget) *Handler {
	if now == nil {
		now = time.Now
	}
	if images == nil {
		images = imagebudget.Default()
	}
	return &Handler{Store: store, Signer: signer, Now: now, Verify: blobs.NewVerifier(images)}
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	base, err := url.Parse(h.Signer.Base())
	if err != nil {
		httpapi.WriteError(w, r, fmt.Errorf("blobhttp: signer base: %w", err))
		return
	}
	key, err := blobs.KeyFromPath(r.URL.EscapedPath(), base.EscapedPath())
	if err != nil {
		httpapi.WriteError(w, r, apierr.Newf(apierr.NotFound, "No such file."))
		return
	}
	q, err := blobs.ParseQuery(r.URL.Query())
	if err != nil {
		writeLinkErr(w, r, blobs.Query{}, err)
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		h.get(w, r, key, q)
	case http.MethodPut:
		h.put(w, r, key, q)
	default:
		w.Header().Set("Allow", "GET, HEAD, PUT")
		httpapi.WriteError(w, r, apierr.Newf(apierr.MethodNotAllowed, "%s is not served on a file link; use GET or PUT.", r.Method))
	}
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request, key string, q blobs.Query) {
	if err := h.Signer.Verify(blobs.Request{Method: r.Method, Key: key, Query: q}, h.Now()); err != nil {
		writeLinkErr(w, r, q, err)
		return
	}
	rc, info, err := h.Store.Open(r.Context(), key)
	if errors.Is(err, blobs.ErrNotFound) {
		httpapi.WriteError(w, r, apierr.Newf(apierr.NotFound, "No such file."))
		return
	}
	if err != nil {
		httpapi.WriteError(w, r, fmt.Errorf("blobhttp: open %s: %w", key, err))
		return
	}
	defer rc.Close()
	ct := info.ContentType
	if ct == "" {
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Cache-Control", "private, max-age=900")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	shown(w.Header(), ct)
	// A seekable file (the directory store's) answers range requests, so an audio or video
	// player reads what it plays instead of the whole file.
	if rs, ok := rc.(io.ReadSeeker); ok {
		serveRanges(w, r, info.ModTime, rs, ct)
		return
	}
	w.Header().Set("Content-Length", strconv.FormatInt(info.Size, 10))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	_, _ = io.Copy(w, rc)
}

// shown sets how a browser may show a file of type ct. Images, sound, video, plain text and
// PDF are shown in a tab; anything else (HTML, SVG, XML, a script: types a model server can
// name for its outputs) is a download. Every file but a PDF (whose viewer is a plugin) is
// shown in a sandbox. No file runs script on the account API's origin, where the console
// lives.
func shown(h http.Header, ct string) {
	mt, _, _ := mime.ParseMediaType(ct)
	top, _, _ := strings.Cut(mt, "/")
	switch {
	case mt == "application/pdf":
		return
	case top == "audio" || top == "video" || mt == "text/plain" ||
		mt == "image/png" || mt == "image/jpeg" || mt == "image/webp" || mt == "image/gif":
	default:
		h.Set("Content-Disposition", "attachment")
	}
	h.Set("Content-Security-Policy", "sandbox")
}

// serveRanges answers the ranges r asks of rs (http.ServeContent). A Range it cannot satisfy
// or read (past the end, malformed) is ignored, as HTTP lets a server do: the whole file
// answers 200, where ServeContent would answer 416 with a line of plain text.
func serveRanges(w http.ResponseWriter, r *http.Request, modTime time.Time, rs io.ReadSeeker, ct string) {
	if r.Header.Get("Range") == "" {
		http.ServeContent(w, r, "", modTime, rs)
		return
	}
	rw := &rangeRefusal{ResponseWriter: w}
	http.ServeContent(rw, r, "", modTime, rs)
	if !rw.refused {
		return
	}
	if _, err := rs.Seek(0, io.SeekStart); err != nil {
		httpapi.WriteError(w, r, fmt.Errorf("blobhttp: seek: %w", err))
		return
	}
	h := w.Header()
	h.Del("Content-Range")
	h.Set("Content-Type", ct)
	whole := r.Clone(r.Context())
	whole.Header.Del("Range")
	http.ServeContent(w, whole, "", modTime, rs)
}

// rangeRefusal holds back ServeContent's 416 and its text, so that the whole file can answer.
type rangeRefusal struct {
	http.ResponseWriter
	refused bool
}

func (w *rangeRefusal) WriteHeader(code int) {
	if code == http.StatusRequestedRangeNotSatisfiable {
		w.refused = true
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *rangeRefusal) Write(p []byte) (int, error) {
	if w.refused {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

func (h *Handler) put(w http.ResponseWriter, r *http.Request, key string, q blobs.Query) {
	req := blobs.Request{Method: r.Method, Key: key, ContentType: r.Header.Get("Content-Type"), Size: r.ContentLength, Query: q}
	if err := h.Signer.Verify(req, h.Now()); err != nil {
		writeLinkErr(w, r, q, err)
		return
	}
	// The declared length passed; cap the body at the signed maximum anyway (chunked bodies).
	body := bufio.NewReaderSize(http.MaxBytesReader(w, r.Body, q.MaxBytes), blobs.SniffLen)
	head, err := body.Peek(blobs.SniffLen)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		writeLinkErr(w, r, q, blobs.ErrLinkTooLarge)
		return
	}
	if !blobs.BytesMatchType(q.ContentType, head) {
		writeLinkErr(w, r, q, blobs.ErrBytesNotDeclaredType)
		return
	}
	// Create, not Put: one file per link. A PUT that fails (too large, cut off) stores
	// nothing, so the link stays usable for a retry until one lands.
	verified := h.Verify.Reader(r.Context(), q.ContentType, body)
	defer verified.Close()
	info, err := h.Store.Create(r.Context(), key, q.ContentType, verified)
	if errors.Is(err, blobs.ErrExists) {
		writeLinkErr(w, r, q, blobs.ErrLinkUsed)
		return
	}
	if errors.As(err, &mbe) {
		writeLinkErr(w, r, q, blobs.ErrLinkTooLarge)
		return
	}
	if errors.Is(err, blobs.ErrBytesNotDeclaredType) {
		writeLinkErr(w, r, q, err)
		return
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || r.Context().Err() != nil {
		// The sender stopped short of the Content-Length it declared, or went away: its
		// doing, not a failure of the store.
		e := apierr.Newf(apierr.InvalidBody, "The body ended before the length it declared (Content-Length). Nothing was stored; send the whole file again with the same link.")
		e.Retry = apierr.RetrySameKey // the same PUT, whole, can succeed: the link is still unused
		httpapi.WriteError(w, r, e.Wrap(err))
		return
	}
	if err != nil {
		httpapi.WriteError(w, r, storeFailed(key, err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "file", "path": key, "content_type": info.ContentType, "bytes": info.Size,
		"request_id": httpapi.RequestID(r)})
}

// storeFullRetrySeconds is the Retry-After of an upload refused because the storage is full.
const storeFullRetrySeconds = 60

// storeFailed answers an upload the store could not keep. Uploads charge nothing, and the
// link stays usable until a file lands, so the answer says both: on a full disk 503
// service_busy with a Retry-After, otherwise 500 internal with charged no. The cause (it names
// paths of the server) goes to the log only.
func storeFailed(key string, err error) *apierr.Error {
	cause := fmt.Errorf("blobhttp: store %s: %w", key, err)
	if blobs.IsFull(err) {
		e := apierr.Newf(apierr.ServiceBusy, "The file could not be stored: the service's storage is full. Nothing was charged; send it again later with the same link.").
			WithRetryAfter(storeFullRetrySeconds).WithStatus(http.StatusServiceUnavailable)
		return e.Wrap(cause)
	}
	e := apierr.Newf(apierr.Internal, "The file could not be stored. Nothing was charged; send it again with the same link.")
	e.Charged = apierr.ChargedNo
	return e.Wrap(cause)
}

// writeLinkErr answers a refused signed link with a catalogued code, in the error body of
// every other route: an expired link is 410 expired (reason link_expired), and so is an upload
// link already used (reason link_used: it writes its file once); a link whose
// signature does not hold, or that is malformed, is 404 not_found (the same answer as a missing
// file: a forged link learns nothing); a method it was not signed for is 405
// method_not_allowed; a content type other than the signed one is 400 unknown_content_type
// carrying the accepted type; a body over the signed maximum is 413 body_too_large carrying
// limit_bytes.
func writeLinkErr(w http.ResponseWriter, r *http.Request, q blobs.Query, err error) {
	var e *apierr.Error
	var large *blobs.ImageTooLargeError
	var costly *imagebudget.TooCostlyError
	switch {
	case errors.As(err, &costly):
		e = apierr.Newf(apierr.UnknownContentType, "The image cannot be read: %s.", costly.Error()).With("accepted", []string{q.ContentType})
	case errors.As(err, &large):
		e = apierr.Newf(apierr.UnknownContentType, "The image is %d × %d pixels, more than the %d an upload may hold: send a smaller one.", large.Width, large.Height, blobs.MaxVerifyPixels).
			With("accepted", []string{q.ContentType})
	case errors.Is(err, blobs.ErrLinkExpired):
		e = apierr.Newf(apierr.Expired, "This signed link has expired (links are valid 15 minutes): ask for a new one.").With("reason", "link_expired")
	case errors.Is(err, blobs.ErrLinkMethod):
		w.Header().Set("Allow", "GET, HEAD, PUT")
		e = apierr.Newf(apierr.MethodNotAllowed, "This link was not signed for %s.", r.Method)
	case errors.Is(err, blobs.ErrLinkContentType):
		e = apierr.Newf(apierr.UnknownContentType, "Send the content type this link was signed for (%s).", q.ContentType).With("accepted", []string{q.ContentType})
	case errors.Is(err, blobs.ErrLinkUsed):
		e = apierr.Newf(apierr.Expired, "This upload link was already used (a link writes its file once): ask POST /v1/uploads for a new one.").With("reason", "link_used")
	case errors.Is(err, blobs.ErrBytesNotDeclaredType):
		e = apierr.Newf(apierr.UnknownContentType, "The bytes sent are not a readable %s file.", q.ContentType).With("accepted", []string{q.ContentType})
	case errors.Is(err, blobs.ErrLinkTooLarge):
		e = apierr.Newf(apierr.BodyTooLarge, "The body is larger than this link allows (%d bytes).", q.MaxBytes).With("limit_bytes", q.MaxBytes)
	default:
		e = apierr.Newf(apierr.NotFound, "No such file: the link is not valid.").Wrap(err)
	}
	httpapi.WriteError(w, r, e)
}
