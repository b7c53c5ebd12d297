package console

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelexec/modelexec/internal/ratelimit"
	"github.com/modelexec/modelexec/internal/webhooks"
)

// recentDeliveries is how many deliveries the page shows per endpoint: one bounded read each,
// and an account has at most a handful of endpoints.
const recentDeliveries = 10

// productWords names each product as the catalogue's models show it to people.
var productWords = map[string]string{
	"photo":              "Images",
	"music":              "Music and audio",
	"threed":             "3D models",
	"video":              "Video",
	"external":           "Models outside the platform",
	webhooks.ProductChat: "Chat",
}

// webhookRoutes serves the webhooks page: the same operations as /v1/webhooks, through the
// same service, plus the recent deliveries and a test event.
func (h *Handler) webhookRoutes(mux *http.ServeMux) {
	mux.Handle("GET /console/webhooks", h.account(h.webhooksPage))
	mux.Handle("POST /console/webhooks", h.account(h.addWebhook))
	mux.Handle("POST /console/webhooks/{id}/challenge", h.change(ratelimit.Write, h.rechallengeWebhook))
	mux.Handle("POST /console/webhooks/{id}/test", h.change(ratelimit.Write, h.testWebhook))
	mux.Handle("POST /console/webhooks/{id}/delete", h.change(ratelimit.Write, h.deleteWebhook))
	mux.Handle("POST /console/webhooks/deliveries/{id}/resend", h.change(ratelimit.Write, h.resendDelivery))
}

type webhookRow struct {
	webhooks.Record
	Products     string // "every product" or the list
	Reason       string // the status's reason in words; "" when there is none to give
	CheckedAt    time.Time
	Verification *webhooks.Verification
	Deliveries   []deliveryRow
}

type deliveryRow struct {
	ID, EventType, EventID, JobID string
	Status                        string
	Attempts                      int
	LastStatusCode                *int
	LastError                     string
	CloseReason                   string
	Created                       time.Time
	LastAttempt, Closed           *time.Time
	NextAttempt                   *time.Time // when a retry is scheduled
	Payload                       string     // the body every attempt sends, indented
	Headers                       []headerLine
}

// headerLine is a header a delivery is sent with, as the delivery's detail shows it.
type headerLine struct{ Name, Value string }

// deliveryHeaders are the headers every attempt of d carries (the engine's, spec 02
// "Delivery"); the signed ones are made again at each attempt, so their values are described.
func deliveryHeaders(d webhooks.Delivery, scheme string) []headerLine {
	sig := "t=<unix seconds>,v2=<Ed25519 signature>,kid=<key id>, made at each attempt"
	if scheme == "HMAC-SHA256" && d.EndpointID != "" {
		sig = "t=<unix seconds>,v1=<HMAC-SHA256 under the endpoint's secret>, made at each attempt"
	}
	req := cmp.Or(d.RequestID, d.EventID)
	return []headerLine{
		{"Content-Type", "application/json"},
		{webhooks.HeaderEvent, d.EventType},
		{webhooks.HeaderDelivery, d.ID},
		{webhooks.HeaderAttempt, "the attempt's number (" + strconv.Itoa(d.Attempts) + " so far)"},
		{webhooks.HeaderSignature, sig},
		{webhooks.HeaderAltRequestID, req},
		{webhooks.HeaderAltUserID, d.Account},
		{webhooks.HeaderAltTimestamp, "unix seconds, at each attempt"},
		{webhooks.HeaderAltSignature, "hex Ed25519 signature, at each attempt"},
	}
}

type webhooksData struct {
	Endpoints  []webhookRow
	Max        int
	Products   []scopeChoice // the product boxes of the add form
	VerifyKeys string
	Algorithm  string
	// Secret is the whsec_ secret of the endpoint just registered or re-challenged, shown on
	// the page that answer redirects to only, under the earlier (HMAC) signing scheme.
	Secret, SecretFor string
	// URL is the add form's value kept after a refusal.
	URL string
}

// webhooksData reads the account's endpoints and each one's latest deliveries.
func (h *Handler) webhooksData(r *http.Request, v *viewer) (webhooksData, error) {
	d := webhooksData{}
	if h.Webhooks == nil {
		return d, nil
	}
	d.Max = h.Webhooks.MaxEndpoints()
	for _, p := range webhooks.AllowedProducts {
		d.Products = append(d.Products, scopeChoice{Name: p, Words: cmp.Or(productWords[p], p)})
	}
	eps, err := h.Webhooks.List(r.Context(), v.Account.ID)
	if err != nil {
		return d, err
	}
	rec := h.Webhooks.Record(webhooks.Endpoint{})
	d.VerifyKeys, d.Algorithm = rec.VerifyKeys, rec.SignatureAlgorithm
	for _, ep := range eps {
		row := webhookRow{Record: h.Webhooks.Record(ep), Products: "every product", Verification: ep.Verification, Reason: statusReason(ep)}
		if len(ep.Products) > 0 {
			names := make([]string, len(ep.Products))
			for i, p := range ep.Products {
				names[i] = cmp.Or(productWords[p], p) + " (" + p + ")"
			}
			row.Products = strings.Join(names, ", ")
		}
		if ep.Verification != nil {
			row.CheckedAt = ep.Verification.CheckedAt
		}
		ds, err := h.Webhooks.RecentDeliveries(r.Context(), v.Account.ID, ep.ID, recentDeliveries)
		if err != nil {
			return d, err
		}
		for _, dl := range ds {
			dr := deliveryRow{ID: dl.ID, EventType: dl.EventType, EventID: dl.EventID, JobID: dl.JobID, Status: string(dl.Status),
				Attempts: dl.Attempts, LastStatusCode: dl.LastStatusCode, LastError: dl.LastError, CloseReason: dl.CloseReason,
				Created: dl.CreatedAt, LastAttempt: dl.LastAttemptAt, Closed: dl.ClosedAt, Payload: pretty(dl.Body),
				Headers: deliveryHeaders(dl, d.Algorithm)}
			if dl.Status == webhooks.DeliveryScheduled {
				next := dl.NextAttemptAt
				dr.NextAttempt = &next
			}
			row.Deliveries = append(row.Deliveries, dr)
		}
		d.Endpoints = append(d.Endpoints, row)
	}
	return d, nil
}

// statusReason says in words why an endpoint is not receiving events, or why its last
// challenge failed.
func statusReason(ep webhooks.Endpoint) string {
	switch ep.Status {
	case webhooks.StatusDisabled:
		return fmt.Sprintf("Disabled after %d consecutive failed deliveries; new events are held. A passing re-challenge sends them.", ep.ConsecutiveFailures)
	case webhooks.StatusDead:
		return "Dead: a delivery was answered 410 Gone. Nothing new is queued; a passing re-challenge revives it."
	}
	if ep.Verification == nil {
		if ep.Status == webhooks.StatusPending {
			return "Not verified yet: re-challenge it."
		}
		return ""
	}
	prefix := "The last challenge failed: "
	if ep.Status == webhooks.StatusPending {
		prefix = "Pending: the challenge failed: "
	}
	return prefix + challengeReason(ep.Verification) + "."
}

// challengeReason is a verification reason in words.
func challengeReason(v *webhooks.Verification) string {
	r := v.Reason
	switch {
	case r == webhooks.ChallengeNonceNotEchoed:
		return "the endpoint answered 2xx but its body did not contain data.nonce"
	case strings.HasPrefix(r, "status_"):
		return "the endpoint answered HTTP " + strings.TrimPrefix(r, "status_")
	case r == webhooks.ChallengeNoSigningKey:
		return "this deployment had no signing key to sign the challenge"
	case r == "timeout":
		return "the endpoint did not answer within 10 seconds"
	case r == "dns_failure":
		return "the host name did not resolve"
	case r == "tls_failure":
		return "the TLS handshake failed (is the certificate valid for the host?)"
	case r == "connection_failed":
		return "the connection was refused or dropped"
	case r == "blocked_address":
		return "the host resolved to a private or loopback address"
	case r == "url_refused":
		return "the URL no longer passes the URL rules"
	}
	return r
}

func (h *Handler) webhooksPage(w http.ResponseWriter, r *http.Request, v *viewer) error {
	d, err := h.webhooksData(r, v)
	if err != nil {
		return err
	}
	var sec shownSecret
	if h.revealed(w, r, v, "/console/webhooks", &sec) {
		d.Secret, d.SecretFor = sec.Secret, sec.For
	}
	h.renderWebhooks(w, http.StatusOK, v, d, h.flash(w, r), "")
	return nil
}

func (h *Handler) renderWebhooks(w http.ResponseWriter, status int, v *viewer, d webhooksData, flash, msg string) {
	h.render(w, status, "webhooks", view{Title: "Webhooks", Nav: "webhooks", V: v, Data: d, Flash: flash, Error: msg})
}

// noWebhooks refuses a change when the deployment does not serve webhooks.
func (h *Handler) noWebhooks() error {
	if h.Webhooks == nil {
		return refuse(http.StatusServiceUnavailable, "This deployment does not deliver webhooks.")
	}
	return nil
}

// addWebhook registers an endpoint from the form under the API's rules (https, a public host,
// known products, the endpoint limit) and challenges it once.
func (h *Handler) addWebhook(w http.ResponseWriter, r *http.Request, v *viewer) error {
	if err := h.noWebhooks(); err != nil {
		return err
	}
	url := strings.TrimSpace(r.PostFormValue("url"))
	products := r.PostForm["product"]
	again := func(status int, msg string) error {
		d, err := h.webhooksData(r, v)
		if err != nil {
			return err
		}
		d.URL = url
		for i := range d.Products {
			d.Products[i].Checked = slices.Contains(products, d.Products[i].Name)
		}
		h.renderWebhooks(w, status, v, d, "", msg)
		return nil
	}
	if refused := standing(v.Account, ratelimit.Write); refused != nil {
		return again(refused.status, refused.msg)
	}
	if url == "" {
		return again(http.StatusBadRequest, "Give the endpoint's https URL.")
	}
	reg, err := h.Webhooks.Register(r.Context(), webhooks.RegisterParams{Account: v.Account.ID, URL: url, Products: products})
	var ue *webhooks.URLError
	var pe *webhooks.ProductsError
	switch {
	case err == nil:
	case errors.As(err, &ue):
		return again(http.StatusBadRequest, ue.Message())
	case errors.As(err, &pe):
		return again(http.StatusBadRequest, fmt.Sprintf("%q is not a product; choose from %s.", pe.Product, strings.Join(pe.Allowed, ", ")))
	case errors.Is(err, webhooks.ErrTooManyWebhooks):
		return again(http.StatusConflict, fmt.Sprintf("An account may have %d endpoints that are not dead: delete one first.", h.Webhooks.MaxEndpoints()))
	case webhooks.NoSigningCredential(err):
		return again(http.StatusServiceUnavailable, "Webhook signing is unavailable on this deployment; nothing was registered.")
	default:
		return err
	}
	msg := fmt.Sprintf("Endpoint %s registered and verified: it receives events now.", reg.Endpoint.ID)
	if !reg.Passed {
		msg = fmt.Sprintf("Endpoint %s registered but not verified: %s. Fix the receiver and re-challenge it.", reg.Endpoint.ID, challengeOutcome(reg))
	}
	return h.answerRegistration(w, r, v, reg, msg)
}

func challengeOutcome(reg webhooks.Registration) string {
	if reg.Endpoint.Verification == nil {
		return "the challenge failed"
	}
	return challengeReason(reg.Endpoint.Verification)
}

// answerRegistration redirects with the outcome; when the deployment signs with per-endpoint
// secrets the webhooks page shows the secret once (reveal.go).
func (h *Handler) answerRegistration(w http.ResponseWriter, r *http.Request, v *viewer, reg webhooks.Registration, msg string) error {
	if reg.Secret != "" {
		if err := h.reveal(w, v, "/console/webhooks", shownSecret{Secret: reg.Secret, For: reg.Endpoint.ID}); err != nil {
			return err
		}
	}
	h.redirectFlash(w, r, "/console/webhooks", msg)
	return nil
}

// shownSecret is the signing secret a registration or re-challenge leaves for the page.
type shownSecret struct {
	Secret string `json:"secret"`
	For    string `json:"for"`
}

// rechallengeWebhook re-runs the challenge on the stored URL, like POST /v1/webhooks/{id}.
func (h *Handler) rechallengeWebhook(w http.ResponseWriter, r *http.Request, v *viewer) error {
	if err := h.noWebhooks(); err != nil {
		return err
	}
	id := r.PathValue("id")
	reg, err := h.Webhooks.Rechallenge(r.Context(), v.Account.ID, id)
	var ue *webhooks.URLError
	switch {
	case err == nil:
	case errors.Is(err, webhooks.ErrNotFound):
		return errNotFound
	case errors.As(err, &ue):
		return h.webhooksRefusal(w, r, v, http.StatusConflict, "The stored URL no longer passes the URL rules: "+ue.Message()+" Delete the endpoint and add it again.")
	case errors.Is(err, webhooks.ErrTooManyWebhooks):
		return h.webhooksRefusal(w, r, v, http.StatusConflict, fmt.Sprintf("Endpoint %s passed the challenge but stays dead: an account may have %d endpoints that are not dead. Delete one first.", id, h.Webhooks.MaxEndpoints()))
	default:
		return err
	}
	msg := fmt.Sprintf("Endpoint %s passed the challenge and is active.", id)
	if !reg.Passed {
		msg = fmt.Sprintf("Endpoint %s failed the challenge: %s. Its status is unchanged (%s).", id, challengeOutcome(reg), reg.Endpoint.Status)
	}
	return h.answerRegistration(w, r, v, reg, msg)
}

func (h *Handler) webhooksRefusal(w http.ResponseWriter, r *http.Request, v *viewer, status int, msg string) error {
	d, err := h.webhooksData(r, v)
	if err != nil {
		return err
	}
	h.renderWebhooks(w, status, v, d, "", msg)
	return nil
}

// testWebhook sends one signed webhook.test event to an active endpoint at once and says how
// the endpoint answered; the delivery is listed with the others.
func (h *Handler) testWebhook(w http.ResponseWriter, r *http.Request, v *viewer) error {
	if err := h.noWebhooks(); err != nil {
		return err
	}
	id := r.PathValue("id")
	d, err := h.Webhooks.SendTest(r.Context(), v.Account.ID, id)
	switch {
	case err == nil:
	case errors.Is(err, webhooks.ErrNotFound):
		return errNotFound
	case errors.Is(err, webhooks.ErrNotActive):
		return h.webhooksRefusal(w, r, v, http.StatusConflict, "A test event goes only to an active endpoint: re-challenge it first.")
	case webhooks.NoSigningCredential(err):
		return h.webhooksRefusal(w, r, v, http.StatusServiceUnavailable, "Webhook signing is unavailable on this deployment; nothing was sent.")
	default:
		return err
	}
	h.redirectFlash(w, r, "/console/webhooks", testOutcome(id, d))
	return nil
}

// testOutcome says what became of a test delivery after its first attempt.
func testOutcome(id string, d webhooks.Delivery) string {
	answer := d.LastError
	if d.LastStatusCode != nil {
		answer = "HTTP " + strconv.Itoa(*d.LastStatusCode)
	}
	switch d.Status {
	case webhooks.DeliveryDelivered:
		return fmt.Sprintf("Test event delivered to %s (%s, delivery %s).", id, answer, d.ID)
	case webhooks.DeliveryScheduled:
		if d.Attempts == 0 {
			return fmt.Sprintf("Test event queued for %s (delivery %s); it is sent when the host's pause ends.", id, d.ID)
		}
		return fmt.Sprintf("Test event to %s failed (%s); it will be retried from %s (delivery %s).", id, answer,
			d.NextAttemptAt.UTC().Format(dateLayout), d.ID)
	default:
		return fmt.Sprintf("Test event to %s was not delivered (%s, %s; delivery %s).", id, answer, d.CloseReason, d.ID)
	}
}

// deleteWebhook removes one of the account's endpoints and its queued deliveries; another
// account's endpoint is not found.
func (h *Handler) deleteWebhook(w http.ResponseWriter, r *http.Request, v *viewer) error {
	if err := h.noWebhooks(); err != nil {
		return err
	}
	id := r.PathValue("id")
	existed, err := h.Webhooks.Delete(r.Context(), v.Account.ID, id)
	if err != nil {
		return err
	}
	if !existed {
		return errNotFound
	}
	h.redirectFlash(w, r, "/console/webhooks", fmt.Sprintf("Endpoint %s deleted with its queued deliveries.", id))
	return nil
}

// resendDelivery sends a delivery's event again to its active endpoint, as a new delivery
// (webhooks.Service.Resend), and says how the endpoint answered.
func (h *Handler) resendDelivery(w http.ResponseWriter, r *http.Request, v *viewer) error {
	if err := h.noWebhooks(); err != nil {
		return err
	}
	id := r.PathValue("id")
	d, err := h.Webhooks.Resend(r.Context(), v.Account.ID, id)
	switch {
	case err == nil:
	case errors.Is(err, webhooks.ErrNotFound):
		return errNotFound
	case errors.Is(err, webhooks.ErrNotActive):
		return h.webhooksRefusal(w, r, v, http.StatusConflict, "A delivery is resent only to an active endpoint: re-challenge it first.")
	case webhooks.NoSigningCredential(err):
		return h.webhooksRefusal(w, r, v, http.StatusServiceUnavailable, "Webhook signing is unavailable on this deployment; nothing was sent.")
	default:
		return err
	}
	h.redirectFlash(w, r, "/console/webhooks", "Resent "+id+" as "+resendOutcome(d))
	return nil
}

// resendOutcome says what became of a resent delivery after its first attempt.
func resendOutcome(d webhooks.Delivery) string {
	answer := d.LastError
	if d.LastStatusCode != nil {
		answer = "HTTP " + strconv.Itoa(*d.LastStatusCode)
	}
	switch d.Status {
	case webhooks.DeliveryDelivered:
		return fmt.Sprintf("%s: delivered (%s).", d.ID, answer)
	case webhooks.DeliveryScheduled:
		if d.Attempts == 0 {
			return fmt.Sprintf("%s: queued; it is sent when the host's pause ends.", d.ID)
		}
		return fmt.Sprintf("%s: not delivered (%s); retried from %s.", d.ID, answer, d.NextAttemptAt.UTC().Format(dateLayout))
	}
	return fmt.Sprintf("%s: not delivered (%s, %s).", d.ID, answer, d.CloseReason)
}
