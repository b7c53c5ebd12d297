package console

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// Every form that changes something carries a token minted with its page (the hidden "once"
// field) and is answered with a redirect (post/redirect/get), so a reload never sends it again.
// The token makes the form itself single-use: the same form sent a second time (a double
// click, the back button and a resend) is not acted on again and is answered with the first
// answer's page and message. A copy sent while the first is still being handled waits for it.
//
// The tokens are remembered by this process for a day (formMemory), at most maxForms of them.

const (
	formMemory = 24 * time.Hour
	maxForms   = 20_000
	// resendWait bounds how long a copy of a form waits for the first one's answer.
	resendWait = 15 * time.Second
)

// sentForm is what became of a form: the page it led to and the message it left. done is
// closed when the first answer is known; target is empty when that answer was a refusal (the
// form may then be fixed and sent again).
type sentForm struct {
	at          time.Time
	done        chan struct{}
	target, msg string
}

type sentForms struct {
	mu sync.Mutex
	m  map[string]*sentForm
}

// claim answers (nil, true) when key is new, and records it as in flight; otherwise the form
// it was first sent as.
func (s *sentForms) claim(key string, now time.Time) (*sentForm, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*sentForm{}
	}
	if f, ok := s.m[key]; ok {
		return f, false
	}
	if len(s.m) >= maxForms {
		s.prune(now)
	}
	s.m[key] = &sentForm{at: now, done: make(chan struct{})}
	return nil, true
}

// finish records the answer of a claimed form: a redirect is kept; a refusal forgets the
// form, so it can be sent again once fixed.
func (s *sentForms) finish(key string, out *formOutcome) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.m[key]
	if f == nil {
		return
	}
	if out.target == "" {
		delete(s.m, key)
	} else {
		f.target, f.msg = out.target, out.msg
	}
	close(f.done)
}

// prune drops forms older than formMemory and, when that is not enough, the oldest half.
func (s *sentForms) prune(now time.Time) {
	var oldest time.Time
	for k, f := range s.m {
		if now.Sub(f.at) > formMemory {
			delete(s.m, k)
		} else if oldest.IsZero() || f.at.Before(oldest) {
			oldest = f.at
		}
	}
	if len(s.m) < maxForms {
		return
	}
	cut := oldest.Add(now.Sub(oldest) / 2)
	for k, f := range s.m {
		if f.at.Before(cut) || len(s.m) >= maxForms {
			delete(s.m, k)
		}
	}
}

// formOutcome is filled by redirectFlash while a claimed form is handled.
type formOutcome struct{ target, msg string }

type outcomeKey struct{}

func outcomeOf(ctx context.Context) *formOutcome {
	o, _ := ctx.Value(outcomeKey{}).(*formOutcome)
	return o
}

// sendOnce runs fn for a form that carries a once token, unless the same form was sent
// before; forms without the field (scripts, older pages) run as they are.
func (h *Handler) sendOnce(w http.ResponseWriter, r *http.Request, v *viewer, fn func(w http.ResponseWriter, r *http.Request, v *viewer) error) error {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return fn(w, r, v)
	}
	tok := r.PostFormValue("once")
	if tok == "" || len(tok) > 64 {
		return fn(w, r, v)
	}
	key := v.Session.ID + "\x00" + r.URL.Path + "\x00" + tok
	if first, ok := h.forms.claim(key, h.Now()); !ok {
		return h.answerResent(w, r, first)
	}
	out := &formOutcome{}
	defer h.forms.finish(key, out)
	return fn(w, r.WithContext(context.WithValue(r.Context(), outcomeKey{}, out)), v)
}

// answerResent answers a form sent again with the first answer's page, saying nothing was
// done this time.
func (h *Handler) answerResent(w http.ResponseWriter, r *http.Request, first *sentForm) error {
	select {
	case <-first.done:
	case <-time.After(resendWait):
		return refuse(http.StatusConflict, "This form is still being handled; nothing was done a second time. Open the page again in a moment to see the outcome.")
	case <-r.Context().Done():
		return r.Context().Err()
	}
	if first.target == "" { // the first was refused and forgotten: this copy is refused alike
		return refuse(http.StatusConflict, "This form was refused when first sent. Open the page again and send a fresh form.")
	}
	h.redirectFlash(w, r, first.target, "This form was already sent, so nothing was done again. "+first.msg)
	return nil
}
