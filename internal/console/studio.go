package console

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/modelexec/modelexec/internal/ratelimit"
	"github.com/modelexec/modelexec/internal/studio"
)

// studioRoutes lets a signed-in owner's page open the studio live route: the session mints the
// ticket, so no API key is ever in the page. Nothing is registered without a ticket signer.
func (h *Handler) studioRoutes(mux *http.ServeMux) {
	if h.Tickets == nil {
		return
	}
	mux.Handle("POST /console/studio/projects/{project}/tickets", h.change(ratelimit.Read, h.studioTicket))
}

// studioTicket mints a ticket for the account's project with the rights of the account's
// console key (every studio scope), answered as the API's studio_ticket.
func (h *Handler) studioTicket(w http.ResponseWriter, r *http.Request, v *viewer) error {
	project := r.PathValue("project")
	if err := studio.CheckID("project", project); err != nil {
		return refuse(http.StatusNotFound, "No such studio project: the "+err.Error()+".")
	}
	key, err := h.Auth.ConsoleKey(r.Context(), v.Account.ID)
	if err != nil {
		return err
	}
	token, tk, err := h.Tickets.Mint(v.Account.ID, key.ID, project)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	return json.NewEncoder(w).Encode(map[string]any{"object": "studio_ticket", "ticket": token, "project": project,
		"expires_at": tk.Expires.Format(time.RFC3339), "expires_in": int(studio.TicketTTL / time.Second),
		"scopes": []string{"studio:read", "studio:write"}})
}
