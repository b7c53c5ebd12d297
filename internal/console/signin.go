package console

import (
	"crypto/hmac"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
)

type signInData struct {
	CSRF, Next, Email string
}

// signInForm shows the form with a fresh double-submit token: the sign-in POST has no
// session yet, so its CSRF token is bound to a short-lived cookie instead.
func (h *Handler) signInForm(w http.ResponseWriter, r *http.Request) error {
	if v, err := h.viewerOf(r); err == nil && v != nil {
		http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return nil
	}
	msg := ""
	if r.URL.Query().Get("unsent") != "" {
		msg = "Your session ended before the form was sent, so it was not: sign in, then send it again."
	}
	h.renderSignIn(w, r, http.StatusOK, "", msg)
	return nil
}

func (h *Handler) renderSignIn(w http.ResponseWriter, r *http.Request, status int, email, msg string) {
	// The seed is the browser's, not the page's: a sign-in page opened in a second tab reuses
	// it, so the first tab's form stays valid. One is minted only when there is none (or it
	// is not one the console could have made); each render gives it its full life again.
	seed := ""
	if c, err := r.Cookie(preCSRFCookie); err == nil && validSeed(c.Value) {
		seed = c.Value
	} else {
		seed = randomToken()
	}
	h.setCookie(w, preCSRFCookie, seed, signInSeedLife)
	next := r.URL.Query().Get("next")
	if r.Method == http.MethodPost {
		next = r.PostFormValue("next")
	}
	h.render(w, status, "signin", view{Title: "Sign in", Error: msg,
		Data: signInData{CSRF: h.csrfToken("signin:" + seed), Next: safeNext(next), Email: email}})
}

// signInSeedLife is how long a sign-in page's form stays good after the last sign-in page.
const signInSeedLife = 30 * time.Minute

// validSeed reports whether s has the shape randomToken gives (32 bytes, base64url).
func validSeed(s string) bool {
	b, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil && len(b) == 32
}

func (h *Handler) signIn(w http.ResponseWriter, r *http.Request) error {
	if err := readForm(w, r); err != nil {
		return err
	}
	seed, err := r.Cookie(preCSRFCookie)
	if err != nil || !hmac.Equal([]byte(r.PostFormValue("csrf")), []byte(h.csrfToken("signin:"+seed.Value))) {
		h.renderSignIn(w, r, http.StatusForbidden, r.PostFormValue("email"), "This form has expired. Please sign in again.")
		return nil
	}
	email := r.PostFormValue("email")
	// Failures are counted per email and client address (read as the API reads it), so a
	// stranger's guesses lock out the stranger's address, not the user signing in elsewhere.
	addr := h.Proxies.ClientAddr(r)
	now := h.Now()
	if l, blocked := h.throttle.blocked(r.Context(), email, addr, now); blocked {
		w.Header().Set("Retry-After", strconv.Itoa(int(l.until.Sub(now).Seconds())+1))
		msg := "Too many failed sign-ins for this email. Try again after %s."
		if l.everywhere {
			msg = "Too many failed sign-ins for this email, from many addresses. Try again after %s."
		}
		h.renderSignIn(w, r, http.StatusTooManyRequests, email, fmt.Sprintf(msg, l.until.UTC().Format(dateLayout)))
		return nil
	}
	token, _, sess, err := h.Sessions.SignIn(r.Context(), email, r.PostFormValue("password"))
	if errors.Is(err, auth.ErrBadCredentials) {
		h.throttle.fail(r.Context(), email, addr, now)
		h.Log.Info("console: sign-in refused")
		h.renderSignIn(w, r, http.StatusUnauthorized, email, "Wrong email or password.")
		return nil
	}
	if err != nil {
		return err
	}
	h.throttle.succeed(r.Context(), email, addr)
	clearCookie(w, preCSRFCookie, h.Secure)
	h.setCookie(w, sessionCookie, token, sess.ExpiresAt.Sub(h.Now()))
	http.Redirect(w, r, safeNext(r.PostFormValue("next")), http.StatusSeeOther)
	return nil
}

// signOut revokes the session (KEY-29): the token is refused from now on, even if a copy of
// the cookie survives somewhere.
func (h *Handler) signOut(w http.ResponseWriter, r *http.Request, v *viewer) error {
	c, err := r.Cookie(sessionCookie)
	if err == nil {
		if err := h.Sessions.SignOut(r.Context(), c.Value); err != nil {
			return err
		}
	}
	clearCookie(w, sessionCookie, h.Secure)
	http.Redirect(w, r, "/console/sign-in", http.StatusSeeOther)
	return nil
}
