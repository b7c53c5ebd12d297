package e2e_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// TestIN_SHARED04_SeedComesBackAsSent: a seed past 2^53, the top of the range among them, is
// echoed exactly, at the top of the result and in its image, by the synchronous host and by
// the queue host's result read; resending the echo is taken and makes the same image (the same
// encoded size). Before,
// the echo was float64's nearest value: 9223372036854776000, which the contract refuses.
// Proves IN-SHARED-04 over both hosts.
func TestIN_SHARED04_SeedComesBackAsSent(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		h := newModelsHarness(t, db)
		for _, seed := range []string{"9223372036854775807", "9007199254740993"} {
			body := `{"positivePrompt":"a cat","width":128,"height":128,"seed":` + seed + `}`
			r := h.run("image-turbo", body)
			if r.Code != 200 {
				t.Fatalf("sync run with seed %s: %d %s", seed, r.Code, r.Raw)
			}
			top, image := echoedSeeds(t, r.Raw)
			if top != seed || image != seed {
				t.Fatalf("sync host echoed seed %s / image seed %s, sent %s", top, image, seed)
			}
			again := h.run("image-turbo", `{"positivePrompt":"a cat","width":128,"height":128,"seed":`+top+`}`)
			if again.Code != 200 || fileSize(t, again.Raw) != fileSize(t, r.Raw) {
				t.Errorf("resending the echoed seed %s: %d %s, first %s", top, again.Code, again.Raw, r.Raw)
			}

			q := h.submit("image-turbo", "wait=30", body)
			if q.Code != 200 || q.str("response_url") == "" {
				t.Fatalf("queue submit: %d %s", q.Code, q.Raw)
			}
			res := h.call(http.MethodGet, q.str("response_url"), "")
			if res.Code != 200 {
				t.Fatalf("result read: %d %s", res.Code, res.Raw)
			}
			if top, image := echoedSeeds(t, res.Raw); top != seed || image != seed {
				t.Errorf("queue result echoed seed %s / image seed %s, sent %s", top, image, seed)
			}
		}
	})
}

// fileSize is the file_size of a result document's first image.
func fileSize(t *testing.T, raw string) float64 {
	t.Helper()
	var doc struct {
		Images []struct {
			FileSize float64 `json:"file_size"`
		} `json:"images"`
	}
	if err := json.Unmarshal([]byte(raw), &doc); err != nil || len(doc.Images) == 0 {
		t.Fatalf("result document %s: %v", raw, err)
	}
	return doc.Images[0].FileSize
}

// echoedSeeds reads a result document's seed and its first image's, as written.
func echoedSeeds(t *testing.T, raw string) (top, image string) {
	t.Helper()
	var doc struct {
		Seed   json.Number `json:"seed"`
		Images []struct {
			Seed json.Number `json:"seed"`
		} `json:"images"`
	}
	d := json.NewDecoder(bytes.NewReader([]byte(raw)))
	d.UseNumber()
	if err := d.Decode(&doc); err != nil || len(doc.Images) == 0 {
		t.Fatalf("result document %s: %v", raw, err)
	}
	return doc.Seed.String(), doc.Images[0].Seed.String()
}

// TestIN_SHARED33_UnboundedIntegerPastInt64RefusedBeforeCharge: an outpaint extent ("integer,
// 0 or more") past what a 64-bit integer holds is refused at submit, uncharged, naming the
// field; it used to pass, charge, and fail at run time with the decoder's text about a Go
// struct. Proves IN-SHARED-33 and IN-SHARED-06 for a field with no upper bound.
func TestIN_SHARED33_UnboundedIntegerPastInt64RefusedBeforeCharge(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		h := newModelsHarness(t, db)
		for _, v := range []string{"1e19", "9223372036854775808", "1e30"} {
			before, n := h.balance(), h.countJobs()
			r := h.run("image-turbo", `{"positivePrompt":"a cat","width":256,"height":256,"outpaint":{"left":`+v+`}}`)
			expectRefusal(t, h.harness, r, 422, "invalid_input", before, n)
			detail, _ := r.Body["detail"].([]any)
			if len(detail) != 1 {
				t.Fatalf("left %s: detail %s", v, r.Raw)
			}
			d, _ := detail[0].(map[string]any)
			loc, _ := json.Marshal(d["loc"])
			if string(loc) != `["body","outpaint","left"]` || d["msg"] != "Input should be less than or equal to 9223372036854775807" {
				t.Errorf("left %s: detail %s", v, r.Raw)
			}
		}
		// The largest extent a 64-bit integer holds is taken at submit; the runner then finds no
		// room for the source and refunds it, as for any extent too large for the canvas.
		before, n := h.balance(), h.countJobs()
		r := h.run("image-turbo", `{"positivePrompt":"a cat","width":256,"height":256,"outpaint":{"left":9223372036854775807}}`)
		if r.Code != 422 || r.str("error") != "invalid_input" || h.balance() != before || h.countJobs() != n+1 ||
			strings.Contains(r.Raw, "less than or equal to") {
			t.Errorf("largest extent: %d %s, balance %d want %d, jobs %d want %d (taken, run, refunded)", r.Code, r.Raw, h.balance(), before, h.countJobs(), n+1)
		}
	})
}
