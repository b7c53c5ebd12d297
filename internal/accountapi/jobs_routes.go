package accountapi

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/jobview"
	"github.com/modelexec/modelexec/internal/ratelimit"
	"github.com/modelexec/modelexec/internal/runners"
)

// Job list paging (spec 01: limit 1 to 100).
const (
	DefaultJobsLimit = 20
	MaxJobsLimit     = 100
)

// cursorLayout writes created_at and next_before: a job record's layout (RFC 3339 in UTC with
// the microseconds the store keeps), so a page that starts at next_before starts exactly after
// the last item.
const cursorLayout = jobview.TimeLayout

// maxTieGroup bounds the jobs of one microsecond answered together on one page.
const maxTieGroup = 1000

// endOfTime is the default `before`: later than any job.
var endOfTime = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

func need(s auth.Scope) func(*http.Request) (auth.Requirement, error) {
	return func(*http.Request) (auth.Requirement, error) { return auth.Need(s), nil }
}

// jobRoutes registers the jobs, assets and usage routes of the account API.
func (h *Handler) jobRoutes(mux *http.ServeMux) {
	g := h.Gate
	jobsRead := httpapi.Route{Bucket: ratelimit.Read, Scope: need(auth.JobsRead)}
	if h.Jobs != nil {
		mux.Handle("GET /v1/jobs", g.Protect(jobsRead, h.listJobs()))
		mux.Handle("GET /v1/jobs/{id}", g.Protect(jobsRead, h.getJob()))
		// Admitted twice: against read here, then against egress for the bytes about to be
		// signed (spec 02 rate-limit rule 1).
		mux.Handle("GET /v1/jobs/{id}/assets", g.Protect(httpapi.Route{Bucket: ratelimit.Read, Scope: need(auth.AssetsRead)}, h.jobAssets()))
	}
	mux.Handle("GET /v1/usage", g.Protect(jobsRead, h.usage())) // not_configured without a reader
	mux.Handle("GET /v1/usage/export", g.Protect(jobsRead, h.usageExport()))
}

// parseBefore reads an ISO 8601 timestamp: RFC 3339 with or without fractional seconds, a
// local date-time without offset (read as UTC), or a bare date (its midnight UTC). A '+' of
// an offset that arrived unescaped in the query (decoded to a space) is put back.
func parseBefore(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, ' '); i > 10 {
		s = s[:i] + "+" + s[i+1:]
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// parseLimit reads `limit` (default 20, 1 to 100).
func parseLimit(s string) (int, error) {
	if s == "" {
		return DefaultJobsLimit, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 1 || n > MaxJobsLimit {
		return 0, apierr.Newf(apierr.InvalidLimit, "limit must be an integer from 1 to %d.", MaxJobsLimit).With("max", MaxJobsLimit)
	}
	return n, nil
}

// record is the job record of a read.
func (h *Handler) record(j jobs.Job) map[string]any { return jobview.Record(j, h.URLs) }

// listJobs serves GET /v1/jobs: the account's jobs, newest first.
//
//	{"object": "list", "data": [job records], "has_more": true,
//	 "next_before": "2026-11-21T10:00:00.123456Z"}
//
// next_before is null on the last page; otherwise send it back as `before` for the next page.
// It is the created_at of the last item, or, when the next job shares that microsecond (jobs
// submitted at once), one microsecond after it with the tied jobs moved to the next page, so
// paging neither skips nor repeats a job. A page made entirely of one microsecond's jobs
// (more than `limit` submitted in the same microsecond) cannot be split by a timestamp: that
// page answers the whole group, up to maxTieGroup jobs, even past `limit`.
func (h *Handler) listJobs() http.Handler {
	return httpapi.Func(func(w http.ResponseWriter, r *http.Request) error {
		p := httpapi.Principal(r)
		q := r.URL.Query()
		before := endOfTime
		if v, ok := q["before"]; ok {
			t, ok := parseBefore(v[0])
			if !ok {
				return apierr.Newf(apierr.InvalidBefore, "before must be an ISO 8601 timestamp, such as next_before of the previous page.").With("before", v[0])
			}
			before = t
		}
		limit, err := parseLimit(q.Get("limit"))
		if err != nil {
			return err
		}
		js, err := h.Jobs.List(r.Context(), p.Account.ID, before, limit+1)
		if err != nil {
			return err
		}
		js, more, cut, err := timePage(js, limit, func(j jobs.Job) time.Time { return j.CreatedAt },
			func(before time.Time) ([]jobs.Job, error) {
				return h.Jobs.List(r.Context(), p.Account.ID, before, maxTieGroup+1)
			})
		if err != nil {
			return err
		}
		var next any
		if more {
			next = cut.UTC().Format(cursorLayout)
		}
		data := make([]map[string]any, len(js))
		for i, j := range js {
			data[i] = h.record(j)
		}
		httpapi.WriteJSON(w, r, http.StatusOK, map[string]any{"object": "list", "data": data, "has_more": more, "next_before": next})
		return nil
	})
}

// getJob serves GET /v1/jobs/{id}: the job record with poll_after_seconds and coverage.
// Another account's job answers not_found, the same as a missing one.
func (h *Handler) getJob() http.Handler {
	return httpapi.Func(func(w http.ResponseWriter, r *http.Request) error {
		p := httpapi.Principal(r)
		j, err := h.Jobs.GetByID(r.Context(), p.Account.ID, r.PathValue("id"))
		if err != nil {
			return err
		}
		httpapi.WriteJSON(w, r, http.StatusOK, h.record(j))
		return nil
	})
}

// jobAssets serves GET /v1/jobs/{id}/assets: a signed link (valid 15 minutes) to each stored
// output file.
//
//	{"object": "list", "job_id": "photo_k1", "data": [{"object": "asset", "url": "…",
//	  "content_type": "image/png", "bytes": 1234, "expires_at": "2026-11-21T10:15:00Z"}]}
//
// Refusals, in order: not_found (missing or another account's job); 409 not_ready (with the
// record's `status`) before a terminal status; 402 refunded when the job did not succeed,
// left no file and nothing stands charged; then the key and account re-read past the read
// cache (key_revoked at once, account_limited with bucket egress for a limited account); then
// the egress admission for the total bytes (429 rate_limited, 413 request_too_large). The rate
// headers are the egress admission's.
func (h *Handler) jobAssets() http.Handler {
	return httpapi.Func(func(w http.ResponseWriter, r *http.Request) error {
		p := httpapi.Principal(r)
		j, err := h.Jobs.GetByID(r.Context(), p.Account.ID, r.PathValue("id"))
		if err != nil {
			return err
		}
		if !j.Settled() {
			return apierr.New(apierr.NotReady, "status", jobview.Record(j, h.URLs)["status"])
		}
		if e := jobview.OutputsExpired(j, h.RetainOutputs, h.Now()); e != nil {
			return e
		}
		var files []runners.File
		if j.Result != nil {
			files = j.Result.Files
		}
		if len(files) == 0 && j.Outcome != jobs.Succeeded && j.Charged == 0 {
			return apierr.New(apierr.Refunded, "status", string(j.Outcome), "error_code", orNull(j.ErrorCode))
		}
		if err := h.Gate.AdmitEgress(w, r, p, runners.FilesBytes(files)); err != nil {
			return err
		}
		data := make([]map[string]any, 0, len(files))
		for _, f := range files {
			link, exp, err := h.Signer.SignGet(r.Context(), f.Key)
			if err != nil {
				return err
			}
			data = append(data, map[string]any{
				"object":       "asset",
				"url":          link,
				"content_type": f.ContentType,
				"bytes":        f.Bytes,
				"expires_at":   exp.UTC().Format(time.RFC3339),
			})
		}
		httpapi.WriteJSON(w, r, http.StatusOK, map[string]any{"object": "list", "job_id": j.ID, "status": string(j.Outcome), "data": data})
		return nil
	})
}

func orNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}
