package accountapi

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
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

// usageCSVHeader and usageLinesCSVHeader are the first rows of the export at its two
// granularities.
var (
	usageCSVHeader      = []string{"date", "key_id", "model", "jobs", "credits_charged", "credits_refunded", "credits_net"}
	usageLinesCSVHeader = []string{"time", "key_id", "model", "job_id", "kind", "credits_charged", "credits_refunded"}
)

// exportGranularities are the export's `granularity` values, for the refusal's `allowed`.
var exportGranularities = []string{"day", "job"}

// usageExport serves GET /v1/usage/export: the window's spend as one CSV file.
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
		granularity := q.Get("granularity")
		if granularity != "" && granularity != "day" && granularity != "job" {
			return apierr.Newf(apierr.InvalidInput,
				"granularity %q is not offered: send day (one row per day, key and model) or job (one row per charge or refund).", granularity).
				With("granularity", granularity).With("allowed", exportGranularities)
		}
		win, err := ledger.ParseWindow(q.Get("window"), h.Now())
		if err != nil {
			return err
		}
		// Counted (and refused when too large) before any byte of the file is written.
		var each func(cw *csv.Writer) error
		name := exportFilename(p.Account.ID, win.Name, "")
		if granularity == "job" {
			exp, err := h.Usage.ExportLines(r.Context(), p.Account.ID, win)
			if err != nil {
				return err
			}
			name = exportFilename(p.Account.ID, win.Name, "-jobs")
			each = func(cw *csv.Writer) error {
				_ = cw.Write(usageLinesCSVHeader)
				rec := make([]string, len(usageLinesCSVHeader))
				return exp.Each(r.Context(), func(l ledger.UsageLine) error {
					rec[0] = l.At.Format("2006-01-02T15:04:05.000000Z")
					rec[1] = csvText(l.KeyID)
					rec[2] = csvText(l.Model)
					rec[3] = csvText(l.JobID)
					rec[4] = csvText(string(l.Kind))
					rec[5] = strconv.FormatInt(int64(l.Charged), 10)
					rec[6] = strconv.FormatInt(int64(l.Refunded), 10)
					return cw.Write(rec)
				})
			}
		} else {
			exp, err := h.Usage.Export(r.Context(), p.Account.ID, win)
			if err != nil {
				return err
			}
			each = func(cw *csv.Writer) error {
				_ = cw.Write(usageCSVHeader)
				rec := make([]string, len(usageCSVHeader))
				return exp.Each(r.Context(), func(u ledger.DayUsage) error {
					rec[0] = u.Day.Format(time.DateOnly)
					rec[1] = csvText(u.KeyID)
					rec[2] = csvText(u.Model)
					rec[3] = strconv.FormatInt(u.Jobs, 10)
					rec[4] = strconv.FormatInt(int64(u.Charged), 10)
					rec[5] = strconv.FormatInt(int64(u.Refunded), 10)
					rec[6] = strconv.FormatInt(int64(u.Net()), 10)
					return cw.Write(rec)
				})
			}
		}
		hd := w.Header()
		hd.Set("Content-Type", "text/csv; charset=utf-8")
		hd.Set("Content-Disposition", `attachment; filename="`+name+`"`)
		hd.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		bw := bufio.NewWriterSize(w, 32<<10)
		cw := csv.NewWriter(bw)
		err = each(cw)
		cw.Flush()
		if err == nil {
			err = cw.Error()
		}
		if err == nil {
			err = bw.Flush()
		}
		if err != nil {
			// The status and some rows are sent: an error body would corrupt the file. The
			// connection is cut instead, so the client sees a broken download, never a
			// complete-looking file with rows missing.
			h.Log.Warn("usage export cut", "account", p.Account.ID, "window", win.Name, "err", err, "request_id", httpapi.RequestID(r))
			panic(http.ErrAbortHandler)
		}
		return nil
	})
}

// csvText makes a text cell safe to open in a spreadsheet: a cell starting with a character
// that spreadsheets read as a formula (= + - @, or a tab or carriage return that hides one) is
// prefixed with a single quote, so it is shown as text and never evaluated. Numbers are
// written by strconv and are never text cells, so a negative net stays a number.
func csvText(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// exportFilename is usage-<account>-<window><suffix>.csv, keeping only characters that need
// no quoting in a Content-Disposition header.
func exportFilename(accountID, window, suffix string) string {
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
				return r
			}
			return '_'
		}, s)
	}
	return "usage-" + clean(accountID) + "-" + clean(window) + suffix + ".csv"
}
