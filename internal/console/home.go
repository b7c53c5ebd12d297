package console

import (
	"net/http"

	"github.com/modelexec/modelexec/internal/auth"
)

type homeData struct {
	Period  string
	APIBase string
	Live    int
	Max     int
}

// home is the overview: the account's plan and credits, and where to go next. An operator's
// home is the account list.
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
	h.render(w, http.StatusOK, "home", view{Title: "Overview", Nav: "home", V: v, Data: d, Flash: h.flash(w, r)})
	return nil
}
