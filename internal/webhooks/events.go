package webhooks

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Event types (spec 02 "Events").
const (
	EventJobSucceeded = "job.succeeded"
	EventJobFailed    = "job.failed"
	EventJobCancelled = "job.cancelled"
	EventChallenge    = "webhook.challenge"
)

// Job statuses carried by events.
const (
	JobSucceeded = "succeeded"
	JobFailed    = "failed"
	JobCancelled = "cancelled"
)

// ProductChat is accepted in an endpoint's products but delivers nothing: chat turns send no
// event (the paying request answers the turn).
const ProductChat = "chat"

// AllowedProducts is the `allowed` list of `invalid_products`: the products of the spec, chat,
// and embeddings (whose calls are jobs that send their event like any other product's).
var AllowedProducts = []string{"photo", "music", "threed", "video", "external", ProductChat, "embeddings"}

// ProductsError is returned for an unknown product name; handlers answer 400
// invalid_products carrying Allowed.
type ProductsError struct {
	Product string
	Allowed []string
}

func (e *ProductsError) Error() string {
	return fmt.Sprintf("webhooks: invalid product %q", e.Product)
}

// NormalizeProducts validates a registration's products: nil or empty means every product
// (returned as nil, shown as null); duplicates are dropped, order kept.
func NormalizeProducts(products []string) ([]string, error) {
	if len(products) == 0 {
		return nil, nil
	}
	out := make([]string, 0, len(products))
	for _, p := range products {
		if !slices.Contains(AllowedProducts, p) {
			return nil, &ProductsError{Product: p, Allowed: slices.Clone(AllowedProducts)}
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// JobEvent is a settled job as the jobs outbox hands it over. It never carries the job's
// output, URLs or prompt, so no delivery can.
type JobEvent struct {
	JobID            string // <product>_k<time-ordered random>; the evt_ id is built from it
	RequestID        string // queue request id; X-Alt-Webhook-Request-Id and per-request request_id
	GatewayRequestID string // X-Request-Id of the submit, for the per-request body
	Account          string
	Product          string
	Status           string  // succeeded, failed, cancelled
	ErrorCode        *string // nil on success
	CreditsCharged   *int64  // nil when the ledger could not be read
	CreditsReserved  *int64
	SettledAt        time.Time
	Chat             bool   // a chat turn: no event at all
	CallbackURL      string // per-request webhook named on the submit; "" when none
}

// EventType maps the job status to its event type.
func (e JobEvent) EventType() (string, error) {
	switch e.Status {
	case JobSucceeded:
		return EventJobSucceeded, nil
	case JobFailed:
		return EventJobFailed, nil
	case JobCancelled:
		return EventJobCancelled, nil
	}
	return "", fmt.Errorf("webhooks: job %s has no settled status (%q)", e.JobID, e.Status)
}

// EventID is evt_<job id>_<status>: one value per job per outcome.
func (e JobEvent) EventID() string { return "evt_" + e.JobID + "_" + e.Status }

// JobData is the job record carried by events (data of the envelope, payload of the
// per-request body).
type JobData struct {
	ID              string  `json:"id"`
	Object          string  `json:"object"`
	Product         string  `json:"product"`
	Status          string  `json:"status"`
	ErrorCode       *string `json:"error_code"`
	CreditsCharged  *int64  `json:"credits_charged"`
	CreditsReserved *int64  `json:"credits_reserved"`
}

// Envelope is the body delivered to a registered endpoint.
type Envelope struct {
	ID        string  `json:"id"`
	Type      string  `json:"type"`
	Created   int64   `json:"created"`
	Data      JobData `json:"data"`
	Account   string  `json:"account"`
	WebhookID *string `json:"webhook_id"`
}

// RequestBody is the queue-protocol body delivered to a per-request webhook.
type RequestBody struct {
	RequestID        string   `json:"request_id"`
	GatewayRequestID string   `json:"gateway_request_id"`
	Status           string   `json:"status"` // OK or ERROR
	Payload          *JobData `json:"payload"`
	Error            *string  `json:"error"`
	Account          string   `json:"account"`
	WebhookID        *string  `json:"webhook_id"`
}

// ChallengeData is the data of a challenge envelope.
type ChallengeData struct {
	WebhookID string `json:"webhook_id"`
	Nonce     string `json:"nonce"`
	How       string `json:"how"`
}

// ChallengeEnvelope is the one signed POST of the registration challenge.
type ChallengeEnvelope struct {
	ID        string        `json:"id"`
	Type      string        `json:"type"`
	Created   int64         `json:"created"`
	Account   string        `json:"account"`
	WebhookID string        `json:"webhook_id"`
	Data      ChallengeData `json:"data"`
}

// ChallengeHow is the instruction sent in data.how.
const ChallengeHow = "Check that account is your own account id, then answer 2xx with data.nonce anywhere in the body, for example {\"nonce\":\"<nonce>\"}. A challenge for another account should be answered 4xx."

func (e JobEvent) jobData() JobData {
	return JobData{ID: e.JobID, Object: "job", Product: e.Product, Status: e.Status, ErrorCode: e.ErrorCode,
		CreditsCharged: e.CreditsCharged, CreditsReserved: e.CreditsReserved}
}

// EnvelopeFor builds the body for registered endpoint webhookID.
func (e JobEvent) EnvelopeFor(webhookID string) ([]byte, error) {
	typ, err := e.EventType()
	if err != nil {
		return nil, err
	}
	id := webhookID
	return json.Marshal(Envelope{ID: e.EventID(), Type: typ, Created: e.SettledAt.Unix(), Data: e.jobData(), Account: e.Account, WebhookID: &id})
}

// RequestBodyJSON builds the per-request (queue-protocol) body.
func (e JobEvent) RequestBodyJSON() ([]byte, error) {
	if _, err := e.EventType(); err != nil {
		return nil, err
	}
	b := RequestBody{RequestID: e.RequestID, GatewayRequestID: e.GatewayRequestID, Account: e.Account}
	if e.Status == JobSucceeded {
		d := e.jobData()
		b.Status, b.Payload = "OK", &d
	} else {
		reason := e.Status
		if e.ErrorCode != nil && *e.ErrorCode != "" {
			reason = *e.ErrorCode
		}
		b.Status, b.Error = "ERROR", &reason
	}
	return json.Marshal(b)
}

// matchesProducts reports whether an endpoint with products wants an event of product.
func matchesProducts(products []string, product string) bool {
	return len(products) == 0 || slices.Contains(products, product)
}
