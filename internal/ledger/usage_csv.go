package ledger

import (
	"bufio"
	"context"
	"encoding/csv"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
)

// The usage export's file format lives here, next to the reads it writes, so the account API's
// GET /v1/usage/export and the console's download are the same file byte for byte: same
// header rows, file name, formula safety and row limit.

// Export granularities: one row per UTC day, key and model, or one per charge or refund.
const (
	GranularityDay = "day"
	GranularityJob = "job"
)

// ExportGranularities lists the granularity values accepted (the refusal's `allowed`).
var ExportGranularities = []string{GranularityDay, GranularityJob}

// UsageCSVHeader and UsageLinesCSVHeader are the first rows of the export at its two
// granularities.
var (
	UsageCSVHeader      = []string{"date", "key_id", "model", "jobs", "credits_charged", "credits_refunded", "credits_net"}
	UsageLinesCSVHeader = []string{"time", "key_id", "model", "job_id", "kind", "credits_charged", "credits_refunded"}
)

// ParseGranularity resolves an export's granularity: "" is day; anything but day or job is
// 400 invalid_input carrying `granularity` and `allowed`.
func ParseGranularity(s string) (string, error) {
	switch s {
	case "", GranularityDay:
		return GranularityDay, nil
	case GranularityJob:
		return GranularityJob, nil
	}
	return "", apierr.Newf(apierr.InvalidInput,
		"granularity %q is not offered: send day (one row per day, key and model) or job (one row per charge or refund).", s).
		With("granularity", s).With("allowed", ExportGranularities)
}

// CSVExport is a usage export that fits in one file, counted and ready to write.
type CSVExport struct {
	// Filename is usage-<account>-<window>.csv (…-jobs.csv per job), safe to put unquoted
	// characters of in a Content-Disposition header.
	Filename string
	Rows     int64 // rows counted when it was prepared

	each func(ctx context.Context, cw *csv.Writer) error
}

// CSVAsked is CSV for a request's own words: the window and granularity names as given (empty:
// the month, per day), refused with the same codes and messages on every surface.
func (u *Usage) CSVAsked(ctx context.Context, accountID, window, granularity string, now time.Time) (*CSVExport, error) {
	g, err := ParseGranularity(granularity)
	if err != nil {
		return nil, err
	}
	w, err := ParseWindow(window, now)
	if err != nil {
		return nil, err
	}
	return u.CSV(ctx, accountID, w, g)
}

// CSV prepares the window's export at a granularity (as ParseGranularity answers) for one
// file: the rows are counted first, so a window past the row limit is refused with 413
// export_too_large before anything is written.
func (u *Usage) CSV(ctx context.Context, accountID string, w Window, granularity string) (*CSVExport, error) {
	if granularity == GranularityJob {
		exp, err := u.ExportLines(ctx, accountID, w)
		if err != nil {
			return nil, err
		}
		return &CSVExport{Filename: exportFilename(accountID, w.Name, "-jobs"), Rows: exp.Rows,
			each: func(ctx context.Context, cw *csv.Writer) error {
				_ = cw.Write(UsageLinesCSVHeader)
				rec := make([]string, len(UsageLinesCSVHeader))
				return exp.Each(ctx, func(l UsageLine) error {
					rec[0] = l.At.UTC().Format("2006-01-02T15:04:05.000000Z")
					rec[1] = csvText(l.KeyID)
					rec[2] = csvText(l.Model)
					rec[3] = csvText(l.JobID)
					rec[4] = csvText(string(l.Kind))
					rec[5] = strconv.FormatInt(int64(l.Charged), 10)
					rec[6] = strconv.FormatInt(int64(l.Refunded), 10)
					return cw.Write(rec)
				})
			}}, nil
	}
	exp, err := u.Export(ctx, accountID, w)
	if err != nil {
		return nil, err
	}
	return &CSVExport{Filename: exportFilename(accountID, w.Name, ""), Rows: exp.Rows,
		each: func(ctx context.Context, cw *csv.Writer) error {
			_ = cw.Write(UsageCSVHeader)
			rec := make([]string, len(UsageCSVHeader))
			return exp.Each(ctx, func(d DayUsage) error {
				rec[0] = d.Day.UTC().Format(time.DateOnly)
				rec[1] = csvText(d.KeyID)
				rec[2] = csvText(d.Model)
				rec[3] = strconv.FormatInt(d.Jobs, 10)
				rec[4] = strconv.FormatInt(int64(d.Charged), 10)
				rec[5] = strconv.FormatInt(int64(d.Refunded), 10)
				rec[6] = strconv.FormatInt(int64(d.Net()), 10)
				return cw.Write(rec)
			})
		}}, nil
}

// WriteTo writes the file to w as the rows are read, a page at a time: it holds a page of rows
// and a write buffer, never the file. An error means the file written so far is incomplete;
// the caller must not let it pass for a whole one.
func (e *CSVExport) WriteTo(ctx context.Context, w io.Writer) error {
	bw := bufio.NewWriterSize(w, 32<<10)
	cw := csv.NewWriter(bw)
	err := e.each(ctx, cw)
	cw.Flush()
	if err == nil {
		err = cw.Error()
	}
	if err == nil {
		err = bw.Flush()
	}
	return err
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
