package console

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/jobview"
	"github.com/modelexec/modelexec/internal/runners"
	"github.com/modelexec/modelexec/internal/webhooks"
)

// Deliveries reads the webhook deliveries of a job (the webhooks store), for the job page.
type Deliveries interface {
	ListDeliveries(ctx context.Context, p webhooks.ListDeliveriesParams) ([]webhooks.Delivery, error)
}

// jobsPage is how many jobs a page of the list shows.
const jobsPage = 50

func (h *Handler) jobRoutes(mux *http.ServeMux) {
	mux.Handle("GET /console/jobs", h.withJobs(h.jobsList))
	mux.Handle("GET /console/jobs/{id}", h.withJobs(h.jobPage))
	mux.Handle("GET /console/jobs/{id}/live", h.withJobs(h.jobLive))
	mux.Handle("GET /console/playground", h.withJobs(h.playground))
	mux.Handle("POST /console/playground", h.withJobs(h.playgroundSubmit))
	mux.Handle("POST /console/playground/quote", h.withJobs(h.playgroundQuote))
}

// withJobs serves an account's page that needs the jobs engine and the link signer; a console
// built without them says so.
func (h *Handler) withJobs(fn func(w http.ResponseWriter, r *http.Request, v *viewer) error) http.Handler {
	return h.account(func(w http.ResponseWriter, r *http.Request, v *viewer) error {
		if h.Jobs == nil || h.Signer == nil {
			return refuse(http.StatusServiceUnavailable, "Jobs are not available on this server.")
		}
		return fn(w, r, v)
	})
}

type jobRow struct {
	ID, Model, State, Key, Coverage string
	Quoted, Charged                 int64
	Created                         time.Time
	Took                            string
	Prompt                          string // the start of the prompt, when the model takes one
	Thumb                           string // a signed link to the first image output
	thumb                           *runners.File
}

type jobsData struct {
	Rows                   []jobRow
	Models                 []string
	States                 []string
	Model, State, From, To string
	FromText, ToText       string // the days as typed, shown again in the form when refused
	Next, Prev, First      string // links to the next (older) page, the previous one and the first
	Filtered               bool
	FilterError            string
	PageSize               int
	Page                   int  // 1 for the newest page; 0 when the way back is too long to count
	Total                  int  // jobs the filters match (-1: not counted on this server)
	TotalMore              bool // more than maxCounted
	// LinksRefused says why the previews are not shown (the download was refused).
	LinksRefused string
}

// maxCounted bounds the count of the jobs a list's filters match; maxTrail bounds how many
// pages back the previous-page links remember.
const (
	maxCounted = 10_000
	maxTrail   = 100
)

// JobCounter counts an account's jobs matching a search, up to max (the jobs store; nil: the
// list shows no total).
type JobCounter interface {
	CountJobs(ctx context.Context, accountID string, q jobs.Search, max int) (int, error)
}

// jobsList is the account's jobs, newest first, narrowed by model, state and the days they
// were created in (from and to, both included, UTC), a page at a time after a cursor. The
// cursors of the pages before are carried in the links (trail), so each page links back.
func (h *Handler) jobsList(w http.ResponseWriter, r *http.Request, v *viewer) error {
	q := r.URL.Query()
	d, s := h.jobsFilters(q)
	status := http.StatusOK
	if d.FilterError != "" {
		status = http.StatusBadRequest
	}
	after := q.Get("after")
	if c, ok := parseCursor(after); ok {
		s.After = &c
	} else {
		after = ""
	}
	trail := parseTrail(q.Get("trail"))
	d.Total = -1
	if d.FilterError != "" {
		h.render(w, status, "jobs", view{Title: "Jobs", Nav: "jobs", V: v, Data: d, Error: d.FilterError})
		return nil
	}
	list, err := h.Jobs.Search(r.Context(), v.Account.ID, s)
	if err != nil {
		return err
	}
	if h.JobCount != nil {
		if d.Total, err = h.JobCount.CountJobs(r.Context(), v.Account.ID, s, maxCounted+1); err != nil {
			return err
		}
		d.TotalMore, d.Total = d.Total > maxCounted, min(d.Total, maxCounted)
	}
	if len(list) > jobsPage {
		list = list[:jobsPage]
		d.Next = "/console/jobs?" + d.query(cursorOf(list[len(list)-1]), append(trail, orFirst(after)))
	}
	if s.After != nil {
		d.First = "/console/jobs?" + d.query("", nil)
		if len(trail) > 0 {
			prev := trail[len(trail)-1]
			if prev == "first" {
				prev = ""
			}
			d.Prev = "/console/jobs?" + d.query(prev, trail[:len(trail)-1])
		}
	}
	d.Page = len(trail) + 1
	if s.After != nil && (len(trail) == 0 || trail[0] != "first") {
		d.Page = 0
	}
	for _, j := range list {
		d.Rows = append(d.Rows, h.jobListRow(r.Context(), v, j))
	}
	d.LinksRefused = h.signThumbs(w, r, v, d.Rows)
	h.render(w, status, "jobs", view{Title: "Jobs", Nav: "jobs", V: v, Data: d, Error: d.FilterError})
	return nil
}

// jobsFilters reads the list's filters; one that does not parse is dropped with a message (the
// page then lists nothing: it is the form again, with the reason and what was typed).
func (h *Handler) jobsFilters(q url.Values) (jobsData, jobs.Search) {
	d := jobsData{Model: q.Get("model"), State: q.Get("status"), From: q.Get("from"), To: q.Get("to"), PageSize: jobsPage}
	d.FromText, d.ToText = d.From, d.To
	for _, m := range h.Catalog.Models() {
		d.Models = append(d.Models, m.Slug)
	}
	if d.Model != "" && !slices.Contains(d.Models, d.Model) {
		d.FilterError, d.Model = "There is no model "+strconv.Quote(d.Model)+": pick one from the list.", ""
	}
	for _, s := range jobs.States {
		d.States = append(d.States, string(s))
	}
	s := jobs.Search{Model: d.Model, State: jobs.State(d.State), Limit: jobsPage + 1}
	if d.State != "" {
		if _, _, ok := s.State.Columns(); !ok {
			d.FilterError, d.State, s.State = "There is no status "+strconv.Quote(d.State)+": pick one from the list.", "", ""
		}
	}
	var err error
	if s.From, err = parseDay(d.From); err != nil {
		d.FilterError, d.From = "From is a day written 2006-01-02.", ""
	}
	if s.To, err = parseDay(d.To); err != nil {
		d.FilterError, d.To = "To is a day written 2006-01-02.", ""
	} else if !s.To.IsZero() {
		s.To = s.To.AddDate(0, 0, 1) // the whole of the last day
	}
	d.Filtered = d.Model != "" || d.State != "" || d.From != "" || d.To != ""
	return d, s
}

// jobListRow is a job as the list shows it, with the start of its prompt and a preview of its
// first image, read from the job itself (the search reads summaries only).
func (h *Handler) jobListRow(ctx context.Context, v *viewer, j jobs.Job) jobRow {
	row := jobRow{ID: j.ID, Model: j.Model, State: string(jobs.StateOf(j)), Key: j.KeyID, Coverage: coverageText(j),
		Quoted: j.Quoted, Charged: j.Charged, Created: j.CreatedAt, Took: took(j)}
	full, err := h.Jobs.GetByID(ctx, v.Account.ID, j.ID)
	if err != nil {
		h.Log.Warn("console: job list row", "job", j.ID, "err", err)
		return row
	}
	row.Prompt = promptOf(full.Input)
	if full.Result != nil {
		for _, f := range full.Result.Files {
			if strings.HasPrefix(f.ContentType, "image/") {
				row.thumb = &f
				break
			}
		}
	}
	return row
}

// signThumbs links each row's preview, all of them admitted as one download (admitDownload);
// when that is refused, no row has a preview and the answer says why.
func (h *Handler) signThumbs(w http.ResponseWriter, r *http.Request, v *viewer, rows []jobRow) string {
	var files []runners.File
	for _, row := range rows {
		if row.thumb != nil {
			files = append(files, *row.thumb)
		}
	}
	if len(files) == 0 {
		return ""
	}
	if err := h.admitDownload(w, r, v, runners.FilesBytes(files)); err != nil {
		return strings.Replace(h.linksRefused(r, err), "the files are listed without links", "no previews are shown", 1)
	}
	for i := range rows {
		if rows[i].thumb == nil {
			continue
		}
		if link, _, err := h.Signer.SignGet(r.Context(), rows[i].thumb.Key); err == nil {
			rows[i].Thumb = link
		}
	}
	return ""
}

// promptOf is the start of a job's prompt (positivePrompt, or prompt), at most 80 characters.
func promptOf(input []byte) string {
	var in struct {
		Positive string `json:"positivePrompt"`
		Prompt   string `json:"prompt"`
	}
	if json.Unmarshal(input, &in) != nil {
		return ""
	}
	p := strings.Join(strings.Fields(cmp.Or(in.Positive, in.Prompt)), " ")
	if r := []rune(p); len(r) > 80 {
		return string(r[:79]) + "…"
	}
	return p
}

func cursorOf(j jobs.Job) string {
	return strconv.FormatInt(j.CreatedAt.UnixMicro(), 10) + "." + j.ID
}

func orFirst(after string) string { return cmp.Or(after, "first") }

// parseTrail reads the cursors of the pages before this one, oldest first ("first" for the
// newest page); a trail longer than maxTrail keeps its last pages.
func parseTrail(s string) []string {
	if s == "" {
		return nil
	}
	var out []string
	for _, c := range strings.Split(s, ",") {
		if _, ok := parseCursor(c); ok || c == "first" {
			out = append(out, c)
		}
	}
	return out[max(0, len(out)-maxTrail):]
}

// query is the list's filters, the cursor to read after and the trail of the pages before.
func (d jobsData) query(after string, trail []string) string {
	q := url.Values{}
	for k, val := range map[string]string{"model": d.Model, "status": d.State, "from": d.From, "to": d.To, "after": after} {
		if val != "" {
			q.Set(k, val)
		}
	}
	if len(trail) > 0 {
		q.Set("trail", strings.Join(trail, ","))
	}
	return q.Encode()
}

func parseDay(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	return time.Parse(time.DateOnly, s)
}

// parseCursor reads "<created_at in µs>.<job id>"; a cursor that does not parse starts over.
func parseCursor(s string) (jobs.Cursor, bool) {
	at, id, ok := strings.Cut(s, ".")
	if !ok || id == "" {
		return jobs.Cursor{}, false
	}
	us, err := strconv.ParseInt(at, 10, 64)
	if err != nil {
		return jobs.Cursor{}, false
	}
	return jobs.Cursor{CreatedAt: time.UnixMicro(us).UTC(), ID: id}, true
}

func coverageText(j jobs.Job) string {
	c := j.Coverage
	switch {
	case c == nil:
		return ""
	case c.Covered() && *c.By == "promotion":
		return "a promotion"
	case c.Covered():
		return "pass " + c.Pass
	case c.Miss != nil:
		return "pass " + c.Miss.Pass + " did not cover it (" + c.Miss.Why + ")"
	}
	return ""
}

func took(j jobs.Job) string {
	if j.StartedAt == nil || j.FinishedAt == nil {
		return ""
	}
	return j.FinishedAt.Sub(*j.StartedAt).Round(time.Millisecond).String()
}

type historyRow struct {
	At    time.Time
	State string
	Note  string
}

type output struct {
	Kind        string `json:"kind"` // image, audio, video or file
	URL         string `json:"url"`
	ContentType string `json:"content_type"`
	Bytes       int64  `json:"bytes"`
	Name        string `json:"name"`
}

type jobDeliveryRow struct {
	ID, Event, Status, URL, LastError string
	Attempts                          int
	Code                              string
	Created                           time.Time
	LastAttempt                       *time.Time
}

type jobData struct {
	Job                   jobs.Job
	State                 string
	Settled               bool
	Input, Result         string
	History               []historyRow
	Refunded              int64
	Coverage              string
	EventID, EventType    string
	Deliveries            []jobDeliveryRow
	DeliveriesUnavailable bool
	Outputs               []output
	// LinksRefused says why the outputs have no links (the download was refused).
	LinksRefused             string
	Logs                     []jobs.LogLine
	Progress                 int
	ErrorCode, ErrorSentence string
	ErrorDocs                string
	ErrorDetail              []string // what was wrong with the input, field by field
	GiveUpAfter              int
	FromPlayground           bool
	// Warnings are the cross-field rules the playground's request broke, shown on the page
	// its run redirects to (reveal.go).
	Warnings []string
}

// jobPage shows one of the account's jobs: what was sent, how it went, what it cost, who was
// told, and what it made (previews, players and download links).
func (h *Handler) jobPage(w http.ResponseWriter, r *http.Request, v *viewer) error {
	j, err := h.accountJob(r, v)
	if err != nil {
		return err
	}
	d := jobData{Job: j, State: string(jobs.StateOf(j)), Settled: j.Settled(), Input: pretty(j.Input), Coverage: coverageText(j),
		Logs: j.Logs, Progress: int(j.Progress * 100), ErrorCode: j.ErrorCode, FromPlayground: r.URL.Query().Has("submitted")}
	if m, ok := h.Catalog.Model(j.Model); ok {
		d.GiveUpAfter = jobview.GiveUpAfterSeconds(j, m)
	}
	d.History = append(d.History, historyRow{At: j.CreatedAt, State: "submitted", Note: "quoted " + creditsText(j.Quoted)})
	if j.StartedAt != nil {
		note := ""
		if j.Attempts > 1 {
			note = strconv.Itoa(j.Attempts) + " attempts"
		}
		d.History = append(d.History, historyRow{At: *j.StartedAt, State: "running", Note: note})
	} else if !j.Settled() {
		d.History = append(d.History, historyRow{At: j.CreatedAt, State: "queued"})
	}
	if j.Settled() {
		at := j.CreatedAt
		if j.FinishedAt != nil {
			at = *j.FinishedAt
		}
		d.History = append(d.History, historyRow{At: at, State: string(j.Outcome), Note: j.ErrorCode})
		d.Refunded = max(j.Reserved-j.Charged, 0)
		d.EventID, d.EventType = "evt_"+j.ID+"_"+string(j.Outcome), "job."+string(j.Outcome)
	}
	h.jobError(&d, j)
	if j.Result != nil {
		var signed bool
		if d.LinksRefused, signed = h.admitOutputs(w, r, v, j); signed {
			if doc, err := jobview.Result(r.Context(), j, h.Signer); err == nil {
				d.Result = pretty(mustJSON(doc))
			} else {
				h.Log.Warn("console: sign result links", "job", j.ID, "err", err)
			}
		}
		d.Outputs = h.outputs(r.Context(), j, signed)
	}
	if h.Deliveries != nil {
		ds, err := h.Deliveries.ListDeliveries(r.Context(), webhooks.ListDeliveriesParams{Account: v.Account.ID, JobID: j.ID})
		if err != nil {
			h.Log.Warn("console: job deliveries", "job", j.ID, "err", err)
			d.DeliveriesUnavailable = true
		}
		for _, dl := range ds {
			row := jobDeliveryRow{ID: dl.ID, Event: dl.EventType, Status: string(dl.Status), URL: dl.URL, LastError: dl.LastError,
				Attempts: dl.Attempts, Created: dl.CreatedAt, LastAttempt: dl.LastAttemptAt}
			if dl.URL == "" {
				row.URL = "endpoint " + dl.EndpointID
			}
			if dl.LastStatusCode != nil {
				row.Code = strconv.Itoa(*dl.LastStatusCode)
			}
			d.Deliveries = append(d.Deliveries, row)
		}
	}
	// The warnings are taken by the first settled page a person navigates to: a running job's
	// page reloads itself when the job settles, and the playground's script reads the page
	// (Sec-Fetch-Mode other than navigate) before the person opens it.
	if mode := r.Header.Get("Sec-Fetch-Mode"); j.Settled() && (mode == "" || mode == "navigate") {
		h.revealed(w, r, v, "/console/jobs/"+j.ID, &d.Warnings)
	} else {
		h.peek(r, v, "/console/jobs/"+j.ID, &d.Warnings)
	}
	page := view{Title: "Job " + j.ID, Nav: "jobs", V: v, Data: d}
	if r.URL.Query().Has("replayed") {
		page.Flash = replayedText
	}
	h.render(w, http.StatusOK, "job", page)
	return nil
}

// replayedText says that a playground form sent again answered the run it first started.
const replayedText = "This form was already sent: showing the run it started. Nothing was run or charged again."

// jobError says why j failed, for a person: its code, the catalogue's sentence and each input
// problem by the field's label.
func (h *Handler) jobError(d *jobData, j jobs.Job) {
	if j.ErrorCode != "" {
		d.ErrorSentence, d.ErrorDocs = errorSentence(j.ErrorCode), apierr.DocsURL(apierr.Code(j.ErrorCode))
	}
	var fields []formField
	if m, ok := h.Catalog.Model(j.Model); ok && len(j.ErrorDetail) > 0 {
		fields = schemaFields(m.InputSchema())
	}
	for _, dv := range j.ErrorDetail {
		d.ErrorDetail = append(d.ErrorDetail, violationText(fields, dv.Loc, firstClause(dv.Msg)))
	}
}

// errorSentence is a job's error for a person: the catalogue's sentence for its code. The
// runner's own message (often a chain of Go errors) stays in the log and the API's answer.
func errorSentence(code string) string {
	if apierr.Known(apierr.Code(code)) {
		return apierr.Lookup(apierr.Code(code)).Message
	}
	return "The job did not complete."
}

// firstClause keeps what a runner's message says before its causes ("the image could not be
// fetched: fetch https://…: dial tcp …" says "the image could not be fetched"): the chain of
// causes is for the log, not for the page.
func firstClause(msg string) string {
	if i := strings.Index(msg, ": "); i > 0 {
		return msg[:i]
	}
	return msg
}

// accountJob reads the job named in the path; another account's job is not found.
func (h *Handler) accountJob(r *http.Request, v *viewer) (jobs.Job, error) {
	j, err := h.Jobs.GetByID(r.Context(), v.Account.ID, r.PathValue("id"))
	if e, ok := apierr.As(err); ok && e.Code == apierr.NotFound {
		return jobs.Job{}, errNotFound
	}
	if err != nil {
		return jobs.Job{}, err
	}
	if j.AccountID != v.Account.ID {
		return jobs.Job{}, errNotFound
	}
	return j, nil
}

// admitOutputs admits the links to j's files as one download (admitDownload): signed says
// they may be signed; otherwise refused says why in words. A job without files needs none.
func (h *Handler) admitOutputs(w http.ResponseWriter, r *http.Request, v *viewer, j jobs.Job) (refused string, signed bool) {
	if len(j.Result.Files) == 0 {
		return "", true
	}
	if err := h.admitDownload(w, r, v, runners.FilesBytes(j.Result.Files)); err != nil {
		return h.linksRefused(r, err), false
	}
	return "", true
}

// outputs are the job's stored files, each shown the way its type plays: an image preview, an
// audio or video player, or a link, behind signed links (valid 15 minutes, as the API's) when
// signed; without links (and so without previews) when the download was refused.
func (h *Handler) outputs(ctx context.Context, j jobs.Job, signed bool) []output {
	var out []output
	for _, f := range j.Result.Files {
		var link string
		if signed {
			var err error
			if link, _, err = h.Signer.SignGet(ctx, f.Key); err != nil {
				h.Log.Warn("console: sign output", "job", j.ID, "err", err)
				continue
			}
		}
		kind, _, _ := strings.Cut(f.ContentType, "/")
		if !slices.Contains([]string{"image", "audio", "video"}, kind) {
			kind = "file"
		}
		name := f.Key
		if i := strings.LastIndexByte(name, '/'); i >= 0 {
			name = name[i+1:]
		}
		out = append(out, output{Kind: kind, URL: link, ContentType: f.ContentType, Bytes: f.Bytes, Name: name})
	}
	return out
}

// liveJob is what the job page's script polls while the job runs.
type liveJob struct {
	State    string         `json:"state"`
	Settled  bool           `json:"settled"`
	Progress float64        `json:"progress"`
	Position *int           `json:"queue_position,omitempty"`
	Logs     []jobs.LogLine `json:"logs"`
	Charged  int64          `json:"credits_charged"`
	Error    *string        `json:"error_code"`
	Outputs  []output       `json:"outputs"`
	// LinksRefused says why the outputs have no url (the download was refused).
	LinksRefused string          `json:"links_refused,omitempty"`
	Result       json.RawMessage `json:"result,omitempty"`
	// Warnings are the run's warnings while its page has not shown them (the playground's
	// script shows them beside the outputs).
	Warnings []string `json:"warnings,omitempty"`
	// Balance is the account's balance as this answer was made (the playground shows it).
	Balance int64 `json:"balance"`
}

// jobLive answers the job's progress and logs as JSON, and its outputs once settled.
func (h *Handler) jobLive(w http.ResponseWriter, r *http.Request, v *viewer) error {
	j, err := h.accountJob(r, v)
	if err != nil {
		return err
	}
	l := liveJob{State: string(jobs.StateOf(j)), Settled: j.Settled(), Progress: j.Progress, Logs: j.Logs, Charged: j.Charged,
		Outputs: []output{}, Balance: v.Account.Balance}
	if l.Logs == nil {
		l.Logs = []jobs.LogLine{}
	}
	if j.ErrorCode != "" {
		l.Error = &j.ErrorCode
	}
	if j.Status == jobs.InQueue {
		n := h.Jobs.QueuePosition(r.Context(), j)
		l.Position = &n
	}
	if j.Result != nil {
		var signed bool
		l.LinksRefused, signed = h.admitOutputs(w, r, v, j)
		l.Outputs = h.outputs(r.Context(), j, signed)
	}
	h.peek(r, v, "/console/jobs/"+j.ID, &l.Warnings)
	writeJSON(w, http.StatusOK, l)
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func pretty(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}
