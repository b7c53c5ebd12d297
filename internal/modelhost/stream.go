package modelhost

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/jobs"
)

// stream serves the status document as server-sent events: one event per change, closed after
// COMPLETED or after StreamLimit (five minutes), or with an `error` event (the error body) once
// the key or the account no longer stands (read again every second); with logs, each event carries the lines new
// since the last. It holds a seat; with none free it answers
// 503 stream_declined. A HEAD (the GET route serves it) gets the stream's headers after the
// same checks and nothing more: it holds no seat and does not wait on the job, so a monitor
// probing the address keeps neither a seat of the account nor its connection.
func (h *Queue) stream() http.Handler {
	return httpapi.Func(func(w http.ResponseWriter, r *http.Request) error {
		logs, err := wantLogs(r)
		if err != nil {
			return err
		}
		j, err := h.job(r)
		if err != nil {
			return err
		}
		if r.Method == http.MethodHead {
			streamHeaders(w)
			w.WriteHeader(http.StatusOK)
			return nil
		}
		p := httpapi.Principal(r)
		release, declined := h.Jobs.Seats().Acquire(p.Account.ID, j.Product)
		if declined != "" {
			return apierr.New(apierr.StreamDeclined, "declined", declined).WithRetryAfter(5)
		}
		defer release()
		limit := h.StreamLimit
		if limit == 0 {
			limit = 5 * time.Minute
		}
		rc := http.NewResponseController(w) // a client that stops reading is cut off by Wrap's write stall
		changes, stop := h.Jobs.Changes(j.RequestID)
		defer stop()
		streamHeaders(w)
		w.WriteHeader(http.StatusOK)
		end := time.NewTimer(limit)
		defer end.Stop()
		poll := time.NewTicker(time.Second)
		defer poll.Stop()
		var last []byte
		sent, run := 0, j.Attempts // the job's log lines this stream has sent, of its run run
		for {
			pos := 0
			if j.Status == jobs.InQueue {
				pos = h.Jobs.QueuePosition(r.Context(), j)
			}
			doc := h.URLs.Status(j, pos, logs)
			b, _ := json.Marshal(doc)
			if string(b) != string(last) {
				last = b
				if doc.Logs != nil {
					// An event carries the lines new since the stream's last one: clients add
					// them up (fal's does), so the whole list in every event repeats lines.
					// A new run of the job (a takeover) starts its log afresh; within one run a
					// read may lag the one before (the running process's lines ahead of the
					// stored row while the job settles): it has nothing new to send.
					all := *doc.Logs
					if j.Attempts != run {
						sent, run = 0, j.Attempts
					}
					fresh := all[min(sent, len(all)):]
					doc.Logs, sent = &fresh, max(sent, len(all))
					b, _ = json.Marshal(doc)
				}
				if _, err := w.Write([]byte("data: " + string(b) + "\n\n")); err != nil {
					return nil
				}
				_ = rc.Flush()
			}
			if j.Settled() {
				return nil
			}
			select {
			case <-r.Context().Done():
				return nil
			case <-end.C:
				return nil
			case <-changes:
			case <-poll.C:
				if refused := h.standing(r, p); refused != nil {
					// A revocation, an expiry or a ban ends the stream within a second of it:
					// its last event says why (spec 02: a read answers key_revoked within 2 s).
					_, body := httpapi.ErrorBody(refused, httpapi.SurfaceOf(r))
					body["request_id"] = httpapi.RequestID(r)
					b, _ := json.Marshal(body)
					_, _ = w.Write([]byte("event: error\ndata: " + string(b) + "\n\n"))
					_ = rc.Flush()
					return nil
				}
			}
			if j, err = h.job(r); err != nil {
				return nil
			}
		}
	})
}

// standing reads the stream's key and account afresh: the refusal their standing now calls
// for, or nil while they stand or cannot be read (the next second's read tries again).
func (h *Queue) standing(r *http.Request, p *auth.Principal) *apierr.Error {
	if h.Gate == nil || h.Gate.Auth == nil || p == nil {
		return nil
	}
	e, _ := apierr.As(h.Gate.Auth.Stands(r.Context(), *p, true))
	return e
}

// streamHeaders sets the headers of a status stream's answer.
func streamHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
}
