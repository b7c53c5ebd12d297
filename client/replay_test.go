package client_test

import (
	"context"
	"testing"

	"github.com/modelexec/modelexec/client"
)

// TestERR31_ReplayOnAnotherModelIsFollowedByTheJobsModel: an idempotency key first used on
// image-turbo answers that job when sent again to image-4b (replayed, model image-turbo); the
// job-based calls follow it at its own model's URLs, where the caller's model would answer 404.
func TestERR31_ReplayOnAnotherModelIsFollowedByTheJobsModel(t *testing.T) {
	ctx := context.Background()
	c := freshClient(t)
	first, err := c.Submit(ctx, "image-turbo", map[string]any{"positivePrompt": "a cat"}, client.SubmitOptions{IdempotencyKey: "replay-across-models"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.Submit(ctx, "image-4b", map[string]any{"positivePrompt": "a fox", "width": 512, "height": 512}, client.SubmitOptions{IdempotencyKey: "replay-across-models"})
	if err != nil {
		t.Fatal(err)
	}
	if !again.Replayed || again.RequestID != first.RequestID || again.Model != "svc-serverless/image-turbo" {
		t.Fatalf("replay answered %+v", again)
	}
	if _, err := c.Status(ctx, "image-4b", again.RequestID, false); !client.IsCode(err, "not_found") {
		t.Fatalf("the job read under the model submitted to: %v, want not_found", err)
	}
	done, err := c.WaitJob(ctx, again, nil)
	if err != nil || !done.Done() {
		t.Fatalf("WaitJob: %+v %v", done, err)
	}
	if st, err := c.StatusJob(ctx, again, false); err != nil || st.Status != "COMPLETED" {
		t.Fatalf("StatusJob: %+v %v", st, err)
	}
	if out, err := c.ResultJob(ctx, again); err != nil || len(out) == 0 {
		t.Fatalf("ResultJob: %s %v", out, err)
	}
	// Without a model field, the model is read from the job's URLs.
	bare := &client.Job{RequestID: again.RequestID, ResponseURL: again.ResponseURL}
	if _, err := c.ResultJob(ctx, bare); err != nil {
		t.Fatalf("ResultJob by response_url: %v", err)
	}
	if _, err := c.CancelJob(ctx, again); client.IsCode(err, "not_found") {
		t.Fatalf("CancelJob: %v", err)
	}
}
