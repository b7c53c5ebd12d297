package console

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/ratelimit"
)

// A signed link to a job's file is a download, wherever it is shown: the job page, its live
// view, a thumbnail in a list. The console signs only what the API would let the account
// download (spec 02: a limited account may read but not download, bucket egress; every
// download is taken by the egress bucket), through the very admission the API's asset list and
// result read use (Handler.Egress, httpapi.Gate.AdmitEgress), with the account's console key
// as the caller.

// admitDownload admits links to bytes of the viewer's files: nil, or the refusal. A banned or
// suspended account is refused first (the gate's read check, auth.AccountStanding); the
// egress admission then refuses a limited account and takes the bytes from the bucket.
func (h *Handler) admitDownload(w http.ResponseWriter, r *http.Request, v *viewer, bytes int64) error {
	if err := auth.AccountStanding(v.Account, true); err != nil {
		return err
	}
	if h.Egress == nil {
		return refuse(http.StatusServiceUnavailable, "Downloads are not configured on this server.")
	}
	key, err := h.Auth.ConsoleKey(r.Context(), v.Account.ID)
	if err != nil {
		return err
	}
	// The admission reads a key sent in Authorization afresh as its caller: a console request
	// is the session's, whatever such a header names.
	rr := r.Clone(r.Context())
	rr.Header.Del("Authorization")
	return h.Egress(w, rr, &auth.Principal{Account: v.Account, Key: key}, bytes)
}

// linksRefused says for a person why the files are shown without links.
func (h *Handler) linksRefused(r *http.Request, err error) string {
	var pe *pageError
	if errors.As(err, &pe) {
		return pe.msg + " The files are listed without links."
	}
	e, ok := apierr.As(err)
	if !ok {
		h.Log.Warn("console: download admission", "path", r.URL.Path, "err", err)
		return "The links to these files could not be made just now; reload the page to try again."
	}
	if e.Code == apierr.AccountLimited {
		return fmt.Sprintf("This account is limited: it may read but not download, so the files are listed without links (%s, bucket %s).",
			e.Code, ratelimit.Egress)
	}
	return fmt.Sprintf("%s (%s): the files are listed without links.", strings.TrimSuffix(e.Text(), "."), e.Code)
}
