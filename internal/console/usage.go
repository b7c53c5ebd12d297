package console

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/modelexec/modelexec/internal/ledger"
)

// usageRoutes serves the usage page and its CSV download. Both read through ledger.Usage, the
// reads GET /v1/usage and GET /v1/usage/export make, over the signed-in person's account only.
func (h *Handler) usageRoutes(mux *http.ServeMux) {
	mux.Handle("GET /console/usage", h.account(h.usagePage))
	mux.Handle("GET /console/usage/export.csv", h.account(h.usageExport))
}

// usageWindowChoices are the windows the page's picker offers; any other name ParseWindow
// accepts ("2m") works in the address too.
var usageWindowChoices = []struct{ Name, Label string }{
	{"month", "This month"},
	{"last_month", "Last month"},
	{"3m", "Last 3 months"},
	{"6m", "Last 6 months"},
	{"12m", "Last 12 months"},
}

// The day chart's drawing box (SVG user units; CSS scales it to the page's width).
const (
	chartW, chartH    = 1000.0, 220.0
	chartTop, chartBL = 16.0, 190.0 // the tallest bar's top, and the baseline when no day is negative
	barW              = 420.0       // the longest horizontal bar of the model and key tables
)

// usageTotals is one line of a table: a model's or a key's spend, or the window's.
// Figures are plain int64 so the template's credits formatting takes its fast path: the
// twelve months' chart formats a few figures for each of 365 days.
type usageTotals struct {
	Name     string
	Jobs     int64
	Charged  int64
	Refunded int64
}

func (t usageTotals) Net() int64 { return t.Charged - t.Refunded }

func (t *usageTotals) add(d ledger.DayUsage) {
	t.Jobs += d.Jobs
	t.Charged += int64(d.Charged)
	t.Refunded += int64(d.Refunded)
}

// usageRow is a table line with its horizontal bar's length.
type usageRow struct {
	usageTotals
	BarW string // SVG width of the bar, "0" for none
}

// usageTable is the spend per model or per key, with the window's total.
type usageTable struct {
	ID, Label string
	Rows      []usageRow
	Total     usageTotals
}

// dayBar is one day of the chart.
type dayBar struct {
	usageTotals
	X, Y, W, H string // SVG geometry
	Negative   bool   // the day gave back more than it charged
}

type chartTick struct {
	X, Label string
}

// gridLine is a horizontal line of the day chart at a round figure, with its label.
type gridLine struct {
	Y, Label string
}

type usageData struct {
	Configured        bool
	Window            ledger.Window
	Last              time.Time // the window's last day (To is exclusive)
	Choices           []struct{ Name, Label string }
	Custom            bool // the window came from the address and is not one of the picker's
	Days              []dayBar
	Ticks             []chartTick
	Grid              []gridLine // gridlines above the zero line, at most four, a whole figure apart
	Max, Min          int64      // the chart's scale
	MaxY, ZeroY, MinY string
	ModelTable        usageTable
	KeyTable          usageTable
	Total             usageTotals
	ExportDay         string // the CSV download links for this window
	ExportJob         string
}

// usagePage shows what the account spent in a window: net credits per day as a bar chart, and
// per model and per key as tables with bars and totals. It reads the ledger's usage rollup, so
// its cost follows the window's days and months (a row per day, and per month, key and model),
// not the account's jobs.
func (h *Handler) usagePage(w http.ResponseWriter, r *http.Request, v *viewer) error {
	d := usageData{Choices: usageWindowChoices, Configured: h.Usage != nil}
	if !d.Configured {
		h.render(w, http.StatusOK, "usage", view{Title: "Usage", Nav: "usage", V: v, Data: d})
		return nil
	}
	// The API's windows and refusals: 400 invalid_input for a name that is no window, 413
	// usage_window_too_large past twelve months, rendered with their messages.
	win, err := ledger.ParseWindow(r.URL.Query().Get("window"), h.Now())
	if err != nil {
		return err
	}
	d.Window, d.Last = win, win.To.AddDate(0, 0, -1)
	d.Custom = !slices.ContainsFunc(usageWindowChoices, func(c struct{ Name, Label string }) bool { return c.Name == win.Name })

	sum, err := h.Usage.Summary(r.Context(), v.Account.ID, win)
	if err != nil {
		return fmt.Errorf("usage read: %w", err)
	}
	nDays := int(win.To.Sub(win.From).Hours()/24 + 0.5)
	days := make([]dayBar, nDays)
	for _, u := range sum.Days {
		if i := int(u.Day.Sub(win.From).Hours() / 24); i >= 0 && i < nDays {
			days[i].add(u)
		}
		d.Total.add(u)
	}
	models := map[string]*usageTotals{}
	for _, u := range sum.Models {
		models[u.Model] = &usageTotals{Name: u.Model}
		models[u.Model].add(u)
	}
	keys := map[string]*usageTotals{}
	for _, k := range sum.Keys {
		keys[k.KeyID] = &usageTotals{Name: k.KeyID, Jobs: k.Jobs, Charged: int64(k.Charged), Refunded: int64(k.Refunded)}
	}
	d.ModelTable = usageTable{ID: "usage-models", Label: "Model", Rows: usageRows(models), Total: d.Total}
	d.KeyTable = usageTable{ID: "usage-keys", Label: "Key", Rows: usageRows(keys), Total: d.Total}
	d.drawDays(days, win)
	q := url.Values{"window": {win.Name}}
	d.ExportDay = "/console/usage/export.csv?" + q.Encode() + "&granularity=day"
	d.ExportJob = "/console/usage/export.csv?" + q.Encode() + "&granularity=job"
	h.render(w, http.StatusOK, "usage", view{Title: "Usage", Nav: "usage", V: v, Data: d})
	return nil
}

// drawDays lays the days out as bars of their net spend: up from the zero line, or down from
// it on a day whose refunds gave back more than it charged.
func (d *usageData) drawDays(days []dayBar, win ledger.Window) {
	for _, b := range days {
		d.Max, d.Min = max(d.Max, b.Net()), min(d.Min, b.Net())
	}
	span := float64(d.Max - d.Min)
	zero := chartBL
	if span > 0 {
		zero = chartTop + (chartBL-chartTop)*float64(d.Max)/span
	}
	scale := func(c int64) float64 {
		if span == 0 {
			return 0
		}
		return (chartBL - chartTop) * float64(c) / span
	}
	slot := chartW / float64(max(len(days), 1))
	gap := min(slot*0.2, 2)
	for i := range days {
		b := &days[i]
		b.Name = win.From.AddDate(0, 0, i).Format(time.DateOnly)
		h := scale(b.Net())
		y := zero - h
		if h < 0 {
			b.Negative, h, y = true, -h, zero
		}
		b.X, b.W, b.Y, b.H = svgNum(float64(i)*slot+gap/2), svgNum(slot-gap), svgNum(y), svgNum(h)
	}
	d.Days = days
	d.MaxY, d.ZeroY, d.MinY = svgNum(chartTop), svgNum(zero), svgNum(chartBL)
	if step := (d.Max + 3) / 4; step > 0 {
		for v := step; v <= d.Max; v += step {
			d.Grid = append(d.Grid, gridLine{Y: svgNum(zero - scale(v)), Label: groupDigits(v)})
		}
	}
	// A tick on the first day of each month, or on every seventh day of a one-month window.
	for i := range days {
		day := win.From.AddDate(0, 0, i)
		label := ""
		switch {
		case len(days) <= 31 && (i%7 == 0):
			label = day.Format("Jan 2")
		case len(days) > 31 && day.Day() == 1:
			label = day.Format("Jan")
		}
		if label != "" {
			d.Ticks = append(d.Ticks, chartTick{X: svgNum(float64(i)*slot + 1), Label: label})
		}
	}
}

// usageRows orders a table by net spend, largest first (then by name, so the order is stable),
// and sizes each bar against the largest.
func usageRows(m map[string]*usageTotals) []usageRow {
	rows := make([]usageRow, 0, len(m))
	var top int64
	for _, t := range m {
		rows = append(rows, usageRow{usageTotals: *t})
		top = max(top, t.Net())
	}
	slices.SortFunc(rows, func(a, b usageRow) int {
		if c := cmp.Compare(b.Net(), a.Net()); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	for i := range rows {
		rows[i].BarW = "0"
		if n := rows[i].Net(); top > 0 && n > 0 {
			rows[i].BarW = svgNum(max(barW*float64(n)/float64(top), 1))
		}
	}
	return rows
}

func svgNum(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) }

// usageExport streams the window's CSV, the very file GET /v1/usage/export answers (ledger
// Usage.CSV writes both): same header rows, file name, formula safety and row limit. A window
// past the limit is refused on a 413 page carrying the export_too_large message before any row
// is written, so nothing is downloaded.
func (h *Handler) usageExport(w http.ResponseWriter, r *http.Request, v *viewer) error {
	if h.Usage == nil {
		return refuse(http.StatusNotFound, "Usage reports are not configured on this deployment.")
	}
	q := r.URL.Query()
	exp, err := h.Usage.CSVAsked(r.Context(), v.Account.ID, q.Get("window"), q.Get("granularity"), h.Now())
	if err != nil {
		return err
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/csv; charset=utf-8")
	hd.Set("Content-Disposition", `attachment; filename="`+exp.Filename+`"`)
	w.WriteHeader(http.StatusOK)
	if err := exp.WriteTo(r.Context(), w); err != nil {
		// Rows are already sent: a page would corrupt the file. The connection is cut instead,
		// so the browser shows a failed download, never a complete-looking file with rows missing.
		h.Log.Warn("console: usage export cut", "account", v.Account.ID, "file", exp.Filename, "err", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}
