package blobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Upload content types accepted by POST /v1/uploads (spec 01, Endpoints), in the order
// the `accepted` list of unknown_content_type names them, with the file extension each
// gets in the upload's path.
var uploadTypes = []uploadType{
	{"image/png", "png"},
	{"image/jpeg", "jpg"},
	{"image/webp", "webp"},
}

// ChatUploadProduct is the upload bucket of text:write keys (spec 02 Scopes): files for chat,
// of the wider set chatUploadTypes.
const ChatUploadProduct = "chat"

// chatUploadTypes are what a chat upload may hold: images, audio, video and documents, each
// checked against its bytes when it is PUT (BytesMatchType).
var chatUploadTypes = append(slices.Clone(uploadTypes), []uploadType{
	{"audio/mpeg", "mp3"}, {"audio/wav", "wav"}, {"audio/flac", "flac"}, {"audio/ogg", "ogg"},
	{"video/mp4", "mp4"}, {"video/webm", "webm"},
	{"application/pdf", "pdf"}, {"text/plain", "txt"}, {"text/markdown", "md"},
}...)

type uploadType struct{ ContentType, Ext string }

// typesFor answers the content types an upload for product may have.
func typesFor(product string) []uploadType {
	if product == ChatUploadProduct {
		return chatUploadTypes
	}
	return uploadTypes
}

// AcceptedUploadTypes lists the content types an upload for product may have.
func AcceptedUploadTypes(product string) []string {
	types := typesFor(product)
	out := make([]string, len(types))
	for i, t := range types {
		out[i] = t.ContentType
	}
	return out
}

// DefaultUploadMaxBytes is the largest file an upload link accepts unless configured.
const DefaultUploadMaxBytes = 20 << 20

// UploadRequest is the body of POST /v1/uploads.
//
//	{"content_type": "image/png", "filename": "cat.png", "product": "photo"}
//
// content_type is required; filename is informational (echoed, never used in the path);
// product names whose write scope the HTTP layer requires (the scope check is its job).
type UploadRequest struct {
	ContentType string `json:"content_type"`
	Filename    string `json:"filename,omitempty"`
	Product     string `json:"product,omitempty"`
}

// Upload is the answer of POST /v1/uploads (status 201).
//
//	{"object": "upload", "path": "uploads/<account>/<id>.png",
//	 "upload_url": "<signed PUT link>", "method": "PUT",
//	 "headers": {"Content-Type": "image/png"},
//	 "read_url": "<signed GET link, usable as any url input>",
//	 "content_type": "image/png", "filename": "cat.png", "product": "photo",
//	 "max_bytes": 20971520, "expires_at": "2026-11-21T10:15:00Z"}
type Upload struct {
	Object      string            `json:"object"`
	Path        string            `json:"path"`
	UploadURL   string            `json:"upload_url"`
	Method      string            `json:"method"`
	Headers     map[string]string `json:"headers"`
	ReadURL     string            `json:"read_url"`
	ContentType string            `json:"content_type"`
	Filename    string            `json:"filename,omitempty"`
	Product     string            `json:"product,omitempty"`
	MaxBytes    int64             `json:"max_bytes"`
	ExpiresAt   string            `json:"expires_at"`
}

// UnknownContentTypeError refuses an upload of a content type outside the accepted list
// (error code unknown_content_type, carrying `accepted`).
type UnknownContentTypeError struct {
	ContentType string
	Accepted    []string
}

// Code is the error code of the catalogue.
func (e *UnknownContentTypeError) Code() string { return "unknown_content_type" }

func (e *UnknownContentTypeError) Error() string {
	return fmt.Sprintf("content type %q is not accepted; send one of %s", e.ContentType, strings.Join(e.Accepted, ", "))
}

// Uploader makes upload slots: a path under the account and the signed links to fill
// and read it.
type Uploader struct {
	Signer   URLSigner
	MaxBytes int64         // 0: DefaultUploadMaxBytes
	NewID    func() string // nil: 16 random bytes, hex
}

// UploadPrefix is where the uploads of account live.
func UploadPrefix(account string) string { return "uploads/" + account + "/" }

// Create answers POST /v1/uploads for account. The file does not exist until the caller
// PUTs it; the read link works as any url input once it does.
func (u *Uploader) Create(ctx context.Context, account string, req UploadRequest) (Upload, error) {
	ct := strings.ToLower(strings.TrimSpace(req.ContentType))
	ext := ""
	for _, t := range typesFor(req.Product) {
		if t.ContentType == ct {
			ext = t.Ext
		}
	}
	if ext == "" {
		return Upload{}, &UnknownContentTypeError{ContentType: req.ContentType, Accepted: AcceptedUploadTypes(req.Product)}
	}
	maxBytes := u.MaxBytes
	if maxBytes <= 0 {
		maxBytes = DefaultUploadMaxBytes
	}
	id := randomID()
	if u.NewID != nil {
		id = u.NewID()
	}
	path := UploadPrefix(account) + id + "." + ext
	if err := CheckKey(path); err != nil {
		return Upload{}, fmt.Errorf("blobs: upload path for account %q: %w", account, err)
	}
	put, exp, err := u.Signer.SignPut(ctx, path, ct, maxBytes)
	if err != nil {
		return Upload{}, err
	}
	get, _, err := u.Signer.SignGet(ctx, path)
	if err != nil {
		return Upload{}, err
	}
	return Upload{
		Object:      "upload",
		Path:        path,
		UploadURL:   put,
		Method:      MethodPut,
		Headers:     map[string]string{"Content-Type": ct},
		ReadURL:     get,
		ContentType: ct,
		Filename:    req.Filename,
		Product:     req.Product,
		MaxBytes:    maxBytes,
		ExpiresAt:   exp.UTC().Format(time.RFC3339),
	}, nil
}

func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
