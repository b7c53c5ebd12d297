package accountapi

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/studio"
)

// studioTicketBody is the answer of POST /v1/studio/projects/{project}/tickets.
type studioTicketBody struct {
	Object    string   `json:"object"`
	Ticket    string   `json:"ticket"`
	Project   string   `json:"project"`
	ExpiresAt string   `json:"expires_at"`
	ExpiresIn int      `json:"expires_in"`
	Scopes    []string `json:"scopes"`
}

// studioTicket mints a ticket that opens one live connection to the project, with the
// minting key's rights, within studio.TicketTTL: what a backend hands its page, so the page
// never holds an API key.
func (h *Handler) studioTicket() http.Handler {
	return httpapi.Func(func(w http.ResponseWriter, r *http.Request) error {
		if h.Tickets == nil {
			return apierr.Newf(apierr.NotFound, "This service does not issue studio tickets.")
		}
		k, err := studioKey(r)
		if err != nil {
			return err
		}
		p := httpapi.Principal(r)
		token, tk, err := h.Tickets.Mint(k.Account, p.Key.ID, k.Project)
		if err != nil {
			return apierr.New(apierr.Internal).Wrap(err)
		}
		var scopes []string
		for _, s := range p.Key.Scopes {
			if s == auth.StudioRead || s == auth.StudioWrite {
				scopes = append(scopes, string(s))
			}
		}
		httpapi.WriteJSON(w, r, http.StatusOK, studioTicketBody{Object: "studio_ticket", Ticket: token, Project: k.Project,
			ExpiresAt: tk.Expires.Format(time.RFC3339), ExpiresIn: int(studio.TicketTTL / time.Second), Scopes: scopes})
		return nil
	})
}

// ParseOrigins checks the operator's list of studio origins: each an absolute http or https
// origin (scheme, host, optional port; no path, query or trailing slash), as a browser writes
// it in the Origin header. It answers them lower-cased.
func ParseOrigins(list []string) ([]string, error) {
	var out []string
	for _, o := range list {
		o = strings.TrimSpace(o)
		if o == "" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil || u.Fragment != "" {
			return nil, fmt.Errorf("%q is not an origin: write scheme, host and optional port, such as https://app.example.com", o)
		}
		out = append(out, strings.ToLower(o))
	}
	return out, nil
}
