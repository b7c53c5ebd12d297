package console

import (
	"fmt"
	"net/http"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/ledger"
)

type homeData struct {
	Period  string
	APIBase string
	Live    int
	Max     int
	// Spend is this month's spend per day (nil: usage reports are not configured).
	Spend *usageData
	// Recent are the account's newest jobs (nil: jobs are not available).
	Recent []jobRow
	// LinksRefused says why the previews are not shown (the download was refused).
	LinksRefused string
}

// recentJobs is how many jobs the overview lists.
const recentJobs = 5

// home is the overview: the account's plan and credits, this month's spend per day, the newest
// jobs, and where to go next. An operator's home is the account list.
func (h *Handler) home(w http.ResponseWriter, r *http.Request, v *viewer) error {
	if v.User.Operator {
		http.Redirect(w, r, "/console/operator/accounts", http.StatusSeeOther)
		return nil
	}
	recs, err := h.Auth.Keys(r.Context(), v.Account.ID)
	if err != nil {
		return err
	}
	now := h.Now()
	d := homeData{Period: auth.Period(now), APIBase: h.APIBase, Max: v.Account.Plan.MaxLiveKeys()}
	for _, k := range recs {
		if k.HoldsSlot(now) {
			d.Live++
		}
	}
	if d.Spend, err = h.monthSpend(r, v); err != nil {
		return err
	}
	if h.Jobs != nil && h.Signer != nil {
		list, err := h.Jobs.Search(r.Context(), v.Account.ID, jobs.Search{Limit: recentJobs})
		if err != nil {
			return err
		}
		d.Recent = []jobRow{}
		for _, j := range list {
			d.Recent = append(d.Recent, h.jobListRow(r.Context(), v, j))
		}
		d.LinksRefused = h.signThumbs(w, r, v, d.Recent)
	}
	h.render(w, http.StatusOK, "home", view{Title: "Overview", Nav: "home", V: v, Data: d, Flash: h.flash(w, r)})
	return nil
}

// monthSpend is this month's spend per day, drawn as the usage page draws it.
func (h *Handler) monthSpend(r *http.Request, v *viewer) (*usageData, error) {
	if h.Usage == nil {
		return nil, nil
	}
	win, err := ledger.ParseWindow("month", h.Now())
	if err != nil {
		return nil, err
	}
	sum, err := h.Usage.Summary(r.Context(), v.Account.ID, win)
	if err != nil {
		return nil, fmt.Errorf("usage read: %w", err)
	}
	d := &usageData{Configured: true, Window: win, Last: win.To.AddDate(0, 0, -1)}
	days := make([]dayBar, int(win.To.Sub(win.From).Hours()/24+0.5))
	for _, u := range sum.Days {
		if i := int(u.Day.Sub(win.From).Hours() / 24); i >= 0 && i < len(days) {
			days[i].add(u)
		}
		d.Total.add(u)
	}
	d.drawDays(days, win)
	return d, nil
}
