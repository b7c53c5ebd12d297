package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"net/http"

	"github.com/modelexec/modelexec/client"
)

func newClient() *client.Client {
	return client.New(apiKey, client.WithAPIURL(apiURL), client.WithQueueURL(queueURL))
}

// Submit a job, follow it to the end and read its output.
func Example() {
	ctx := context.Background()
	c := newClient()
	job, err := c.Submit(ctx, "svc-serverless/image-4b", map[string]any{
		"positivePrompt": "a red fox in the snow", "width": 512, "height": 512,
	}, client.SubmitOptions{IdempotencyKey: "example-fox"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("quoted:", job.CreditsQuoted > 0)
	done, err := c.WaitJob(ctx, job, func(j *client.Job) {
		// called with every new status document: IN_QUEUE, IN_PROGRESS, COMPLETED
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(done.Status)
	out, err := c.ResultJob(ctx, job)
	if err != nil {
		fmt.Println(err)
		return
	}
	var result struct {
		Images []struct {
			URL string `json:"url"`
		} `json:"images"`
	}
	_ = json.Unmarshal(out, &result)
	fmt.Println("images:", len(result.Images))

	// The same idempotency key answers the first job and charges nothing.
	again, err := c.Submit(ctx, "svc-serverless/image-4b", map[string]any{
		"positivePrompt": "a red fox in the snow", "width": 512, "height": 512,
	}, client.SubmitOptions{IdempotencyKey: "example-fox"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("replayed:", again.Replayed, "charged:", again.CreditsCharged)
	// Output:
	// quoted: true
	// COMPLETED
	// images: 1
	// replayed: true charged: 0
}

// Upload a local image; its read_url is what a url input takes.
func ExampleClient_Upload() {
	var buf bytes.Buffer
	_ = png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, 64, 64)))
	up, err := newClient().Upload(context.Background(), "image/png", &buf)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := http.Get(up.ReadURL)
	if err != nil {
		fmt.Println(err)
		return
	}
	res.Body.Close()
	fmt.Println(res.StatusCode, res.Header.Get("Content-Type"))
	// Output: 200 image/png
}

// Read a model's published price rule before submitting.
func ExampleClient_Quote() {
	m, err := newClient().Quote(context.Background(), "image-4b")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.ID, m.Price.Kind, len(m.Price.Rule.Bands) > 0)
	// Output: svc-serverless/image-4b quoted true
}

// A refusal is an *client.Error carrying the service's error body.
func ExampleError() {
	_, err := newClient().Submit(context.Background(), "svc-serverless/image-4b", map[string]any{"width": "wide"}, client.SubmitOptions{})
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Println(e.StatusCode, e.Code, e.Retry, e.Charged, e.RequestID != "")
	}
	// Output: 422 invalid_input never no true
}
