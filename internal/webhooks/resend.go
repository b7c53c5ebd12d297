package webhooks

import (
	"context"
	"time"
)

// Resend sends a delivery's event to its endpoint again, at once, as a new delivery: the same
// event (id, type and body, so a receiver that deduplicates on the event id sees it once) under
// its own Svc-Delivery, signed anew, through the engine like any event (retried on the usual
// ladder when not answered 2xx). A person resends from the console after fixing a receiver.
// Errors: ErrNotFound (no such delivery of the account, or one of a per-request webhook),
// ErrNotActive (the endpoint is not active: re-challenge it first).
func (s *Service) Resend(ctx context.Context, account, deliveryID string) (Delivery, error) {
	d, err := s.cfg.Store.GetDelivery(ctx, deliveryID)
	if err != nil {
		return Delivery{}, err
	}
	if d.Account != account || d.EndpointID == "" {
		return Delivery{}, ErrNotFound
	}
	ep, err := s.cfg.Store.GetEndpoint(ctx, d.EndpointID)
	if err != nil {
		return Delivery{}, err
	}
	if ep.Status != StatusActive {
		return Delivery{}, ErrNotActive
	}
	again, err := randomID(s.cfg.Rand, "resend_", 10)
	if err != nil {
		return Delivery{}, err
	}
	now := s.cfg.Clock.Now()
	dlv := DeliveryID(ep.ID, d.EventID+"\x00"+again)
	ids, err := s.cfg.Store.EnqueueDeliveries(ctx, EnqueueParams{Now: now, Deliveries: []NewDelivery{{ID: dlv, EndpointID: ep.ID,
		Account: ep.Account, EventID: d.EventID, EventType: d.EventType, JobID: d.JobID, RequestID: d.RequestID, Body: d.Body}}})
	if err != nil {
		return Delivery{}, err
	}
	if len(ids) == 0 {
		return Delivery{}, ErrNotActive // it stopped being active in between
	}
	return s.sendNow(ctx, now, dlv)
}

// sendNow makes the first attempt of delivery dlv from a person's request: this row only, so a
// backlog of the endpoint is not sent from a page, finished even if the person leaves (the
// sender bounds it). It answers the delivery as it stands after the attempt.
func (s *Service) sendNow(ctx context.Context, now time.Time, dlv string) (Delivery, error) {
	sendCtx := context.WithoutCancel(ctx)
	if _, err := s.engine.sendClaimed(sendCtx, now, ClaimParams{Now: now, Limit: 1, DeliveryID: dlv,
		LeaseUntil: now.Add(s.cfg.Lease)}); err != nil {
		return Delivery{}, err
	}
	return s.cfg.Store.GetDelivery(sendCtx, dlv)
}
