package webhooks

// Recorder is what the delivery engine reports: one call per attempt that reached the
// receiver (or failed on the way), by outcome and ladder step (1 for the first attempt … 7).
// Outcomes: "delivered" (2xx), "failed" (a retry is scheduled), "dead" (no attempt follows:
// refused, gone or the ladder exhausted). The process's metrics implement it.
type Recorder interface {
	WebhookDelivery(outcome string, step int)
}

type nopRecorder struct{}

func (nopRecorder) WebhookDelivery(string, int) {}

// outcomeOf names an attempted delivery's outcome for the Recorder.
func outcomeOf(rec AttemptParams) string {
	switch {
	case rec.Status == DeliveryDelivered:
		return "delivered"
	case rec.Status == DeliveryScheduled:
		return "failed"
	}
	return "dead"
}
