package webhooks

import (
	"context"
	"encoding/json"
	"errors"
)

// EventTest is the type of the event the console's "send a test event" sends: a receiver can
// tell it apart from a job event by Svc-Event or the envelope's type, and should answer it
// 2xx without acting on it.
const EventTest = "webhook.test"

// TestMessage is data.message of a test event.
const TestMessage = "A test event sent from the console. It is signed like every delivery; answer 2xx and do nothing else with it."

// ErrNotActive: a test event goes only to an active endpoint (verified by a challenge and
// neither disabled nor dead), since only an active endpoint is sent anything.
var ErrNotActive = errors.New("webhooks: endpoint is not active")

// TestData is the data of a test envelope.
type TestData struct {
	WebhookID string `json:"webhook_id"`
	Message   string `json:"message"`
}

// TestEnvelope is the body of a test event: the envelope of a job event with test data.
type TestEnvelope struct {
	ID        string   `json:"id"`
	Type      string   `json:"type"`
	Created   int64    `json:"created"`
	Data      TestData `json:"data"`
	Account   string   `json:"account"`
	WebhookID *string  `json:"webhook_id"`
}

// SendTest queues one webhook.test event for the account's active endpoint and sends it at
// once through the delivery engine: the same signing, the same headers, a delivery row with
// its attempts, and the same effect on the endpoint's counters as any event. An answer other
// than 2xx is retried on the usual ladder. Returns the delivery as it stands after the first
// attempt. Errors: ErrNotFound (no such endpoint of the account), ErrNotActive.
func (s *Service) SendTest(ctx context.Context, account, id string) (Delivery, error) {
	ep, err := s.cfg.Store.GetEndpoint(ctx, id)
	if err != nil {
		return Delivery{}, err
	}
	if ep.Account != account {
		return Delivery{}, ErrNotFound
	}
	if ep.Status != StatusActive {
		return Delivery{}, ErrNotActive
	}
	evtID, err := randomID(s.cfg.Rand, "evt_test_", 10)
	if err != nil {
		return Delivery{}, err
	}
	now := s.cfg.Clock.Now()
	whID := ep.ID
	body, err := json.Marshal(TestEnvelope{ID: evtID, Type: EventTest, Created: now.Unix(),
		Data: TestData{WebhookID: ep.ID, Message: TestMessage}, Account: ep.Account, WebhookID: &whID})
	if err != nil {
		return Delivery{}, err
	}
	dlv := DeliveryID(ep.ID, evtID)
	ids, err := s.cfg.Store.EnqueueDeliveries(ctx, EnqueueParams{Now: now, Deliveries: []NewDelivery{{ID: dlv,
		EndpointID: ep.ID, Account: ep.Account, EventID: evtID, EventType: EventTest, Body: body}}})
	if err != nil {
		return Delivery{}, err
	}
	if len(ids) == 0 {
		return Delivery{}, ErrNotActive // it stopped being active in between
	}
	// Claim this one row only, so a backlog of the endpoint is not sent from a page's request,
	// and finish the attempt even if the person leaves the page (the sender bounds it).
	sendCtx := context.WithoutCancel(ctx)
	if _, err := s.engine.sendClaimed(sendCtx, now, ClaimParams{Now: now, Limit: 1, DeliveryID: dlv,
		LeaseUntil: now.Add(s.cfg.Lease)}); err != nil {
		return Delivery{}, err
	}
	return s.cfg.Store.GetDelivery(sendCtx, dlv)
}

// RecentDeliveries returns the account's endpoint's latest deliveries, newest first, at most
// limit (1 to 100; 20 when out of range). Errors: ErrNotFound.
func (s *Service) RecentDeliveries(ctx context.Context, account, id string, limit int) ([]Delivery, error) {
	ep, err := s.cfg.Store.GetEndpoint(ctx, id)
	if err != nil {
		return nil, err
	}
	if ep.Account != account {
		return nil, ErrNotFound
	}
	if limit < 1 || limit > MaxRecentDeliveries {
		limit = 20
	}
	return s.cfg.Store.RecentDeliveries(ctx, ep.ID, limit)
}

// MaxRecentDeliveries bounds RecentDeliveries.
const MaxRecentDeliveries = 100
