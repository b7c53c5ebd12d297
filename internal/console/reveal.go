package console

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"time"
)

// A secret made by a form (a new key, a webhook signing secret, a user's random password) is
// shown once, on the page the form redirects to. It travels there in a short-lived cookie
// sealed under a key of the deployment secret and the session (AES-GCM): unreadable outside
// the server, useless to another session, and cleared by the page that shows it.

const (
	revealCookie = "modelexec_reveal"
	revealLife   = 2 * time.Minute
)

// reveal leaves payload for the next page under path.
func (h *Handler) reveal(w http.ResponseWriter, v *viewer, path string, payload any) error {
	plain, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	aead, err := h.revealCipher(v)
	if err != nil {
		return err
	}
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce)
	sealed := aead.Seal(nonce, nonce, plain, []byte(path))
	http.SetCookie(w, &http.Cookie{Name: revealCookie, Value: base64.RawURLEncoding.EncodeToString(sealed), Path: path,
		MaxAge: int(revealLife / time.Second), HttpOnly: true, Secure: h.Secure, SameSite: http.SameSiteStrictMode})
	return nil
}

// revealed takes what reveal left for path into dst, once; false when there is nothing (or
// nothing this session can open).
func (h *Handler) revealed(w http.ResponseWriter, r *http.Request, v *viewer, path string, dst any) bool {
	if _, err := r.Cookie(revealCookie); err == nil {
		http.SetCookie(w, &http.Cookie{Name: revealCookie, Value: "", Path: path, MaxAge: -1, HttpOnly: true, Secure: h.Secure,
			SameSite: http.SameSiteStrictMode})
	}
	return h.peek(r, v, path, dst)
}

// peek reads what reveal left for path into dst and leaves it there (it expires by itself).
func (h *Handler) peek(r *http.Request, v *viewer, path string, dst any) bool {
	c, err := r.Cookie(revealCookie)
	if err != nil {
		return false
	}
	sealed, err := base64.RawURLEncoding.DecodeString(c.Value)
	aead, cerr := h.revealCipher(v)
	if err != nil || cerr != nil || len(sealed) < aead.NonceSize() {
		return false
	}
	n := aead.NonceSize()
	plain, err := aead.Open(nil, sealed[:n], sealed[n:], []byte(path))
	return err == nil && json.Unmarshal(plain, dst) == nil
}

func (h *Handler) revealCipher(v *viewer) (cipher.AEAD, error) {
	m := hmac.New(sha256.New, h.Secret)
	m.Write([]byte("modelexec console reveal\x00" + v.Session.ID))
	block, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}
