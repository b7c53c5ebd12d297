package accountapi_test

import (
	"context"
	"encoding/csv"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/ledger"
	"github.com/modelexec/modelexec/internal/server"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// This file tests GET /v1/usage/export over HTTP, on SQLite and PostgreSQL: the CSV against
// charges made through real jobs, the row limit of one file (export_too_large), the windows it
// shares with GET /v1/usage, its scope, account isolation and spreadsheet-formula safety.

var exportHeader = "date,key_id,model,jobs,credits_charged,credits_refunded,credits_net"

// exportCSV fetches a day export and parses it, checking it is a CSV attachment named after
// the account and the window.
func (e *accEnv) exportCSV(key, account, window string) [][]string {
	e.t.Helper()
	path := "/v1/usage/export"
	if window != "" {
		path += "?window=" + window
	} else {
		window = "month"
	}
	return e.fetchCSV(path, key, "usage-"+account+"-"+window+".csv", exportHeader)
}

// fetchCSV fetches path and parses the CSV attachment it answers, checking its file name and
// header row; it answers the rows after the header.
func (e *accEnv) fetchCSV(path, key, filename, header string) [][]string {
	e.t.Helper()
	a := e.get(path, key)
	if a.status != 200 {
		e.t.Fatalf("%s: %d %s", path, a.status, a.raw)
	}
	if ct := a.header.Get("Content-Type"); ct != "text/csv; charset=utf-8" {
		e.t.Fatalf("Content-Type %q", ct)
	}
	if cd, want := a.header.Get("Content-Disposition"), `attachment; filename="`+filename+`"`; cd != want {
		e.t.Fatalf("Content-Disposition %q, want %q", cd, want)
	}
	recs, err := csv.NewReader(strings.NewReader(string(a.raw))).ReadAll()
	if err != nil {
		e.t.Fatalf("export is not CSV: %v\n%s", err, a.raw)
	}
	if len(recs) == 0 || strings.Join(recs[0], ",") != header {
		e.t.Fatalf("export header: %s", a.raw)
	}
	return recs[1:]
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return v
}

// TestACC15_UsageExportCSV proves the export's content against charges made through real jobs:
// one row per UTC day, key and model in that order, jobs, charged, refunded and net agreeing
// with the jobs' settlements and with GET /v1/usage's totals, over the windows of GET
// /v1/usage; another account's spend never appears, and an account without spend gets the
// header alone.
func TestACC15_UsageExportCSV(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e := newAccEnv(t, db)
		e.usage.PageRows = 2 // every read below takes several pages
		key1 := e.account("acct_exp")
		m2, err := e.svc.Mint(context.Background(), auth.MintParams{AccountID: "acct_exp"})
		if err != nil {
			t.Fatal(err)
		}
		key2 := m2.Key
		other := e.account("acct_exp_other")
		e.clock.Set(time.Date(2026, 10, 15, 12, 0, 0, 0, time.UTC))
		oct := e.settle(e.submit(key1, "image-lite", `{"positivePrompt":"october"}`, "x0"))
		e.clock.Set(time.Date(2026, 11, 20, 23, 0, 0, 0, time.UTC))
		a1 := e.settle(e.submit(key1, "image-lite", `{"positivePrompt":"first"}`, "x1"))
		e.clock.Set(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
		a2 := e.settle(e.submit(key1, "image-lite", `{"positivePrompt":"second"}`, "x2"))
		failed := e.settle(e.submit(key2, "image-lite", `{"positivePrompt":"fail this one"}`, "x3"))
		b1 := e.settle(e.submit(key2, "image-lite", `{"positivePrompt":"third"}`, "x4"))
		theirs := e.settle(e.submit(other, "image-lite", `{"positivePrompt":"not yours"}`, "x5"))
		k1, k2 := a1.KeyID, b1.KeyID

		rows := e.exportCSV(key1, "acct_exp", "")
		type row struct {
			date, key, model   string
			jobs, ch, ref, net int64
		}
		got := make([]row, len(rows))
		for i, r := range rows {
			if len(r) != 7 {
				t.Fatalf("row %d has %d cells: %v", i, len(r), r)
			}
			got[i] = row{r[0], r[1], r[2], atoi(t, r[3]), atoi(t, r[4]), atoi(t, r[5]), atoi(t, r[6])}
			if got[i].net != got[i].ch-got[i].ref {
				t.Fatalf("row %d: net is not charged - refunded: %v", i, r)
			}
		}
		// Ordered by date, then key id.
		day21 := []row{
			{"2026-11-21", k1, "image-lite", 1, a2.Charged, 0, a2.Charged},
			{"2026-11-21", k2, "image-lite", 2, failed.Reserved + b1.Charged, failed.Reserved, b1.Charged},
		}
		if k2 < k1 {
			day21[0], day21[1] = day21[1], day21[0]
		}
		want := append([]row{{"2026-11-20", k1, "image-lite", 1, a1.Charged, 0, a1.Charged}}, day21...)
		if len(got) != len(want) {
			t.Fatalf("export rows %+v, want %+v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("row %d = %+v, want %+v", i, got[i], want[i])
			}
		}
		// The rows add up to GET /v1/usage's totals over the same window.
		u := e.get("/v1/usage", key1)
		e.want(u, 200, "")
		total, _ := u.body["total"].(map[string]any)
		var ch, ref, jobs int64
		for _, r := range got {
			ch, ref, jobs = ch+r.ch, ref+r.ref, jobs+r.jobs
		}
		if num(total["credits_charged"]) != ch || num(total["credits_refunded"]) != ref || num(total["jobs"]) != jobs {
			t.Fatalf("export sums %d/%d/%d, usage total %v", ch, ref, jobs, total)
		}
		// last_month is October's one job; 12m holds both months.
		if rows := e.exportCSV(key2, "acct_exp", "last_month"); len(rows) != 1 ||
			strings.Join(rows[0], ",") != "2026-10-15,"+k1+",image-lite,1,"+strconv.FormatInt(oct.Charged, 10)+",0,"+strconv.FormatInt(oct.Charged, 10) {
			t.Fatalf("last_month export = %v", rows)
		}
		if rows := e.exportCSV(key1, "acct_exp", "12m"); len(rows) != 4 || rows[0][0] != "2026-10-15" {
			t.Fatalf("12m export = %v", rows)
		}
		// Another account's spend never appears in this one's export, and the reverse.
		for _, w := range []string{"", "12m"} {
			for _, r := range e.exportCSV(key1, "acct_exp", w) {
				if r[1] == theirs.KeyID {
					t.Fatalf("another account's key in the export: %v", r)
				}
			}
		}
		if rows := e.exportCSV(other, "acct_exp_other", ""); len(rows) != 1 || rows[0][1] != theirs.KeyID {
			t.Fatalf("other account's export = %v", rows)
		}
		quiet := e.account("acct_exp_quiet")
		if rows := e.exportCSV(quiet, "acct_exp_quiet", "12m"); len(rows) != 0 {
			t.Fatalf("an account without spend exported %v", rows)
		}
		// granularity=day is the default; granularity=job lists the ledger's lines: each
		// charge and refund with its job and model, adding up to the same figures.
		e.want(e.get("/v1/usage/export?granularity=day", key1), 200, "")
		lines := e.fetchCSV("/v1/usage/export?granularity=job", key1, "usage-acct_exp-month-jobs.csv",
			"time,key_id,model,job_id,kind,credits_charged,credits_refunded")
		type line struct{ key, job, kind string }
		seen := map[line]int64{}
		var lch, lref int64
		prev := ""
		for _, l := range lines {
			// Key by key, each key's lines in the order written.
			if len(l) != 7 || l[2] != "image-lite" || l[1]+l[0] < prev || !strings.HasPrefix(l[0], "2026-11-") {
				t.Fatalf("job line %v (after %s)", l, prev)
			}
			prev = l[1] + l[0]
			seen[line{l[1], l[3], l[4]}] += atoi(t, l[5]) + atoi(t, l[6])
			lch, lref = lch+atoi(t, l[5]), lref+atoi(t, l[6])
		}
		wantLines := map[line]int64{
			{k1, a1.ID, "charge"}: a1.Charged, {k1, a2.ID, "charge"}: a2.Charged,
			{k2, failed.ID, "charge"}: failed.Reserved, {k2, failed.ID, "refund"}: failed.Reserved,
			{k2, b1.ID, "charge"}: b1.Charged,
		}
		if len(lines) != len(wantLines) || len(seen) != len(wantLines) {
			t.Fatalf("job lines %v, want %v", lines, wantLines)
		}
		for l, v := range wantLines {
			if seen[l] != v {
				t.Fatalf("job line %+v = %d, want %d (lines %v)", l, seen[l], v, lines)
			}
		}
		if lch != ch || lref != ref {
			t.Fatalf("job lines add up to %d/%d, the day rows to %d/%d", lch, lref, ch, ref)
		}
		if l := e.fetchCSV("/v1/usage/export?granularity=job&window=12m", other, "usage-acct_exp_other-12m-jobs.csv",
			"time,key_id,model,job_id,kind,credits_charged,credits_refunded"); len(l) != 1 || l[0][3] != theirs.ID {
			t.Fatalf("other account's job lines = %v", l)
		}
		a := e.get("/v1/usage/export?granularity=hour", key1)
		e.want(a, 400, "invalid_input")
		if a.body["granularity"] != "hour" {
			t.Fatalf("granularity refusal = %s", a.raw)
		}
	})
}

// exportRefused checks a JSON refusal of the export (never a CSV body) carrying window and
// retry never.
func (e *accEnv) exportRefused(path, key string, status int, code, window string) accAnswer {
	e.t.Helper()
	a := e.get(path, key)
	e.want(a, status, code)
	if ct := a.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") || a.header.Get("Content-Disposition") != "" {
		e.t.Fatalf("%s: refusal sent as %q (%q)", path, ct, a.header.Get("Content-Disposition"))
	}
	if a.body["window"] != window || a.body["retry"] != "never" || a.body["error_type"] != "PayloadTooLargeError" && status == 413 {
		e.t.Fatalf("%s: %s", path, a.raw)
	}
	return a
}

// TestACC15_ExportTooLarge proves ACC-15's second half: an export that would hold more rows
// than one file is refused with 413 export_too_large carrying `window`, before any row is sent,
// with a message telling the person to pick a smaller window; a window that fits (exactly the
// limit included) is served whole; a window too big to read is usage_window_too_large, as on
// GET /v1/usage.
func TestACC15_ExportTooLarge(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e := newAccEnvConfig(t, db, func(c *server.Config) { c.UsageExportRows = 2 })
		key := e.account("acct_big")
		e.clock.Set(time.Date(2026, 10, 3, 9, 0, 0, 0, time.UTC))
		e.settle(e.submit(key, "image-lite", `{"positivePrompt":"october"}`, "b0"))
		e.clock.Set(time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC))
		e.settle(e.submit(key, "image-lite", `{"positivePrompt":"day two"}`, "b1"))
		e.clock.Set(time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC))
		e.settle(e.submit(key, "image-lite", `{"positivePrompt":"day three"}`, "b2"))

		// November holds exactly two rows: the limit, served.
		if rows := e.exportCSV(key, "acct_big", ""); len(rows) != 2 {
			t.Fatalf("month export = %v", rows)
		}
		// Three months hold three: refused before any row.
		a := e.exportRefused("/v1/usage/export?window=3m", key, 413, "export_too_large", "3m")
		if msg, _ := a.body["message"].(string); !strings.Contains(msg, "smaller window") {
			t.Fatalf("message does not say what to do: %q", msg)
		}
		if strings.Contains(string(a.raw), exportHeader) {
			t.Fatalf("rows sent with the refusal: %s", a.raw)
		}
		// One more row this month tips it over as well.
		e.settle(e.submit(key, "image-lite", `{"positivePrompt":"day three again"}`, "b3")) // same day, key, model: same row
		if rows := e.exportCSV(key, "acct_big", "month"); len(rows) != 2 || rows[1][3] != "2" {
			t.Fatalf("month export after a second job the same day = %v", rows)
		}
		e.clock.Set(time.Date(2026, 11, 4, 9, 0, 0, 0, time.UTC))
		e.settle(e.submit(key, "image-lite", `{"positivePrompt":"day four"}`, "b4"))
		e.exportRefused("/v1/usage/export", key, 413, "export_too_large", "month")
		// Per job, November's three lines fit no file of two rows either, while October's one does.
		e.exportRefused("/v1/usage/export?granularity=job", key, 413, "export_too_large", "month")
		if l := e.fetchCSV("/v1/usage/export?granularity=job&window=last_month", key, "usage-acct_big-last_month-jobs.csv",
			"time,key_id,model,job_id,kind,credits_charged,credits_refunded"); len(l) != 1 {
			t.Fatalf("last_month job lines = %v", l)
		}
		// Windows past twelve months are too big to read at all; a name that is no window is 400.
		for _, w := range []string{"13m", "24m"} {
			e.exportRefused("/v1/usage/export?window="+w, key, 413, "usage_window_too_large", w)
		}
		e.want(e.get("/v1/usage/export?window=week", key), 400, "invalid_input")
		// last_month still fits.
		if rows := e.exportCSV(key, "acct_big", "last_month"); len(rows) != 1 {
			t.Fatalf("last_month export = %v", rows)
		}
	})
}

// TestERR33_UsageRefusalsRows proves ERR-33's rows as the export answers them:
// export_too_large and usage_window_too_large are 413 PayloadTooLargeError carrying `window`,
// retry never, charged no, each with its docs link.
func TestERR33_UsageRefusalsRows(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e := newAccEnvConfig(t, db, func(c *server.Config) { c.UsageExportRows = 1 })
		key := e.account("acct_err33")
		e.settle(e.submit(key, "image-lite", `{"positivePrompt":"one"}`, "e1"))
		e.clock.Add(24 * time.Hour)
		e.settle(e.submit(key, "image-lite", `{"positivePrompt":"two"}`, "e2"))
		for _, c := range []struct{ path, code, window string }{
			{"/v1/usage/export?window=6m", "export_too_large", "6m"},
			{"/v1/usage/export?window=36m", "usage_window_too_large", "36m"},
			{"/v1/usage?window=36m", "usage_window_too_large", "36m"},
		} {
			a := e.exportRefused(c.path, key, 413, c.code, c.window)
			if a.body["charged"] != "no" || !strings.HasSuffix(a.body["docs"].(string), "/docs/errors/"+c.code) {
				t.Fatalf("%s: %s", c.path, a.raw)
			}
		}
	})
}

// TestACC15_ExportScope proves the export takes jobs:read like GET /v1/usage: a key without it
// is refused with insufficient_scope before anything is read, and a key is needed at all.
func TestACC15_ExportScope(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e := newAccEnv(t, db)
		e.account("acct_scope_exp")
		noReads := legacyKey(t, db, "test-secret-0123456789abcdef", "acct_scope_exp", auth.ImageWrite)
		a := e.get("/v1/usage/export", noReads)
		scopeRefused(t, "export", a.status, a.body, string(a.raw), "jobs:read", "jobs:read")
		if a.header.Get("Content-Disposition") != "" {
			t.Fatalf("a refused export named a file: %v", a.header)
		}
		e.want(e.get("/v1/usage/export", ""), 401, "missing_authorization")
	})
}

// TestACC15_ExportFormulaSafe proves the export is safe to open in a spreadsheet: a text cell
// starting with = + - @ (or a tab or carriage return) is prefixed with a single quote, so it is
// read as text and never evaluated, while numbers (a negative net included) stay numbers.
func TestACC15_ExportFormulaSafe(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e := newAccEnv(t, db)
		storetest.NewAccount(t, db, "acct_formula", auth.Pro, 10000)
		m, err := e.svc.Mint(context.Background(), auth.MintParams{AccountID: "acct_formula"})
		if err != nil {
			t.Fatal(err)
		}
		keyID := m.Record.ID
		day := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
		// Movements named after hostile models, through the ledger as a job's would be (the
		// catalogue's own slugs are tame; a runner's or an operator's need not be).
		l := ledger.New(db, e.clock.Now)
		n := 0
		move := func(model string, quote ledger.Credits, done float64, charged, settled time.Time) {
			t.Helper()
			j := ledger.Job{AccountID: "acct_formula", KeyID: keyID, JobID: "job_" + strconv.Itoa(n), Model: model, Quote: quote}
			n++
			var c ledger.Charged
			err := db.InTx(context.Background(), func(tx *sqlstore.Tx) error {
				var err error
				_, c, err = l.Charge(context.Background(), tx, ledger.Request{Job: j, InFlightLimit: -1}, charged)
				return err
			})
			if err == nil {
				err = db.InTx(context.Background(), func(tx *sqlstore.Tx) error {
					_, err := l.Settle(context.Background(), tx, ledger.Settlement{Job: j, Reserved: c.Reserved, Done: done, Created: charged}, settled)
					return err
				})
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		hostile := []string{`=HYPERLINK("http://evil.example","x")`, "+1+1", "-2+3", "@SUM(A1)", "\tfoo", "\r=1"}
		for _, h := range hostile {
			move(h, 10, 1, day, day)
		}
		// Charged on the 20th, refunded on the 21st: the 21st's net is negative.
		move("image-lite", 10, 0, day.AddDate(0, 0, -1), day)

		rows := e.exportCSV(m.Key, "acct_formula", "")
		cells := map[string][]string{}
		for _, r := range rows {
			cells[r[2]] = r
			for i, c := range r {
				if c != "" && strings.ContainsRune("=+-@\t\r", rune(c[0])) && !(i >= 3 && isInt(c)) {
					t.Fatalf("cell %d of %v starts with %q", i, r, c[0])
				}
			}
		}
		for _, h := range hostile {
			if r := cells["'"+h]; r == nil || r[3] != "1" || r[4] != "10" {
				t.Fatalf("model %q not exported as quoted text: %v", h, rows)
			}
		}
		var negative bool
		for _, r := range rows {
			if r[0] == "2026-11-21" && r[2] == "image-lite" && r[6] == "-10" && r[5] == "10" && r[4] == "0" {
				negative = true
			}
		}
		if !negative {
			t.Fatalf("the refund-only day is not a plain negative number: %v", rows)
		}
	})
}

func isInt(s string) bool { _, err := strconv.ParseInt(s, 10, 64); return err == nil }
