package accountapi

import (
	"fmt"
	"net/http"
	"time"

	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/ledger"
)

// usage serves GET /v1/usage: the account's spend per key in a window (ledger.ParseWindow
// says which windows are accepted and how the others are refused).
//
//	{"object": "usage", "window": "month", "from": "2026-11-01T00:00:00Z", "to": "2026-12-01T00:00:00Z",
//	 "data": [{"object": "key_usage", "key_id": "…", "credits_charged": 30, "credits_refunded": 24,
//	           "net": 6, "jobs": 2}],
//	 "total": {"credits_charged": 30, "credits_refunded": 24, "net": 6, "jobs": 2}}
//
// The figures are ledger movements written in the window (a refund counts when it was given);
// `to` is exclusive.
func (h *Handler) usage() http.Handler {
	return httpapi.Func(func(w http.ResponseWriter, r *http.Request) error {
		if h.Usage == nil {
			return notConfigured("Usage reports are not configured on this deployment.")
		}
		p := httpapi.Principal(r)
		win, err := ledger.ParseWindow(r.URL.Query().Get("window"), h.Now())
		if err != nil {
			return err
		}
		rows, err := h.Usage.ByKey(r.Context(), p.Account.ID, win)
		if err != nil {
			return fmt.Errorf("usage read: %w", err)
		}
		data := make([]map[string]any, 0, len(rows))
		var total ledger.KeyUsage
		for _, u := range rows {
			data = append(data, map[string]any{
				"object":           "key_usage",
				"key_id":           u.KeyID,
				"credits_charged":  u.Charged,
				"credits_refunded": u.Refunded,
				"net":              u.Net(),
				"jobs":             u.Jobs,
			})
			total.Charged, total.Refunded, total.Jobs = total.Charged+u.Charged, total.Refunded+u.Refunded, total.Jobs+u.Jobs
		}
		httpapi.WriteJSON(w, r, http.StatusOK, map[string]any{
			"object": "usage",
			"window": win.Name,
			"from":   win.From.Format(time.RFC3339),
			"to":     win.To.Format(time.RFC3339),
			"data":   data,
			"total": map[string]any{
				"credits_charged":  total.Charged,
				"credits_refunded": total.Refunded,
				"net":              total.Net(),
				"jobs":             total.Jobs,
			},
		})
		return nil
	})
}

// usageExport serves GET /v1/usage/export: the window's spend as one CSV file (the file's
// format is ledger.Usage.CSV's, shared with the console's download).
//
// With granularity=day (the default) it has one row per UTC day, key and model, in that order
// (the rollup's own order: no sort):
//
//	date,key_id,model,jobs,credits_charged,credits_refunded,credits_net
//	2026-11-21,key_…,image-lite,2,30,24,6
//
// With granularity=job it lists the ledger's lines instead, one per charge or refund, key by
// key (in key id order) and each key's in the order they were written:
//
//	time,key_id,model,job_id,kind,credits_charged,credits_refunded
//	2026-11-21T10:00:00.000000Z,key_…,image-lite,job_…,charge,15,0
//
// It takes the windows of GET /v1/usage and refuses them alike. A window holding more rows than
// one file is refused with 413 export_too_large (carrying `window`) before any row is written:
// the rows are counted first. The rows are then written as the database hands them over, so
// the export holds a page of rows in memory (ledger.Usage.PageRows), never the file, and no
// database connection is held while the client reads. A day's net can be negative when it gave
// back an earlier day's charge.
func (h *Handler) usageExport() http.Handler {
	return httpapi.Func(func(w http.ResponseWriter, r *http.Request) error {
		if h.Usage == nil {
			return notConfigured("Usage reports are not configured on this deployment.")
		}
		p := httpapi.Principal(r)
		q := r.URL.Query()
		// Counted (and refused when too large) before any byte of the file is written.
		exp, err := h.Usage.CSVAsked(r.Context(), p.Account.ID, q.Get("window"), q.Get("granularity"), h.Now())
		if err != nil {
			return err
		}
		hd := w.Header()
		hd.Set("Content-Type", "text/csv; charset=utf-8")
		hd.Set("Content-Disposition", `attachment; filename="`+exp.Filename+`"`)
		hd.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		if err := exp.WriteTo(r.Context(), w); err != nil {
			// The status and some rows are sent: an error body would corrupt the file. The
			// connection is cut instead, so the client sees a broken download, never a
			// complete-looking file with rows missing.
			h.Log.Warn("usage export cut", "account", p.Account.ID, "file", exp.Filename, "err", err, "request_id", httpapi.RequestID(r))
			panic(http.ErrAbortHandler)
		}
		return nil
	})
}
