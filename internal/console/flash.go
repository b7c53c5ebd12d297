package console

import (
	"net/http"
	"net/url"
)

const flashCookie = "modelexec_flash"

// redirectFlash answers a form with 303 to target (post/redirect/get: reloading the page does
// not send the form again) and leaves a one-line message for the next page in a cookie, not
// in the address, so a link cannot put words in the console's mouth.
func (h *Handler) redirectFlash(w http.ResponseWriter, r *http.Request, target, msg string) {
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Value: url.QueryEscape(msg), Path: "/console", MaxAge: 60,
		HttpOnly: true, Secure: h.Secure, SameSite: http.SameSiteStrictMode})
	if o := outcomeOf(r.Context()); o != nil {
		o.target, o.msg = target, msg
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// flash takes the message a redirect left, once.
func (h *Handler) flash(w http.ResponseWriter, r *http.Request) string {
	c, err := r.Cookie(flashCookie)
	if err != nil {
		return ""
	}
	clearCookie(w, flashCookie, h.Secure)
	m, err := url.QueryUnescape(c.Value)
	if err != nil || len(m) > 500 {
		return ""
	}
	return m
}
