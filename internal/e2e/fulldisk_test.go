package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/modelexec/modelexec/internal/blobs"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// serverWords are what an answer must never carry: a path of the server, an error chain of
// the code, the operating system's words.
var serverWords = []string{"/srv/", ".tmp", "put-", "blobs:", "blobhttp", "no space left", "store output", "runner_failed:"}

func noServerWords(t *testing.T, where, body string) {
	t.Helper()
	for _, w := range serverWords {
		if strings.Contains(body, w) {
			t.Errorf("%s carries %q: %.400s", where, w, body)
		}
	}
}

// TestERR_FullDiskAnswersInWords proves issue 30 items 5 and 6 over HTTP with a store whose
// writes fail as a full disk fails them (ENOSPC, naming a path of the server): /readyz turns
// 503 with Retry-After naming the storage; an upload answers 503 service_busy with Retry-After
// and charged "no"; a job whose output cannot be stored fails run_failed, refunded, with a
// sentence that says the storage is full on its submit, result read and job read, none of
// which carries the path or the error chain. Once the disk has room again the same upload link
// works and /readyz is 200.
func TestERR_FullDiskAnswersInWords(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		var full atomic.Bool
		enospc := &fs.PathError{Op: "write", Path: "/srv/modelexec/blobs/.tmp/put-4711", Err: syscall.ENOSPC}
		bucket := blobs.FailWrites(blobs.NewMemory(), func() error {
			if full.Load() {
				return enospc
			}
			return nil
		})
		m := newModelsHarnessOn(t, db, bucket, nil)
		if r := m.call(http.MethodGet, m.api.URL+"/readyz", ""); r.Code != http.StatusOK {
			t.Fatalf("readyz with room: %d %s", r.Code, r.Raw)
		}
		full.Store(true)
		r := m.call(http.MethodGet, m.api.URL+"/readyz", "")
		if r.Code != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" || r.str("unavailable") != "storage" {
			t.Fatalf("readyz on a full disk: %d %v %s", r.Code, r.Header, r.Raw)
		}
		noServerWords(t, "readyz", r.Raw)

		link := m.call(http.MethodPost, m.api.URL+"/v1/uploads", `{"content_type":"image/png","product":"photo"}`)
		if link.Code != http.StatusCreated {
			t.Fatalf("POST /v1/uploads: %d %s", link.Code, link.Raw)
		}
		put := func() resp {
			req, err := http.NewRequest(link.str("method"), link.str("upload_url"), bytes.NewReader(encodePNG(t, image.NewGray(image.Rect(0, 0, 8, 8)))))
			if err != nil {
				t.Fatal(err)
			}
			hdr, _ := link.Body["headers"].(map[string]any)
			for k, v := range hdr {
				req.Header.Set(k, fmt.Sprint(v))
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			raw, _ := io.ReadAll(res.Body)
			out := resp{Code: res.StatusCode, Header: res.Header, Raw: string(raw)}
			_ = json.Unmarshal(raw, &out.Body)
			return out
		}
		up := put()
		if up.Code != http.StatusServiceUnavailable || up.str("error") != "service_busy" || up.Body["charged"] != "no" ||
			up.Header.Get("Retry-After") == "" || !strings.Contains(up.str("message"), "storage is full") {
			t.Fatalf("upload on a full disk: %d %v %s", up.Code, up.Header, up.Raw)
		}
		noServerWords(t, "upload", up.Raw)

		before := m.balance()
		sub := m.submit("image-lite", "wait=60", `{"positivePrompt":"a fox"}`)
		noServerWords(t, "submit", sub.Raw)
		id := sub.str("request_id")
		if id == "" {
			t.Fatalf("submit: %d %s", sub.Code, sub.Raw)
		}
		m.waitSettled(id)
		res := m.call(http.MethodGet, m.queue.URL+"/svc-serverless/image-lite/requests/"+id, "")
		if res.str("error") != "run_failed" || !strings.Contains(res.str("message"), "storage is full") {
			t.Fatalf("result read: %d %s", res.Code, res.Raw)
		}
		noServerWords(t, "result read", res.Raw)
		for _, u := range []string{m.queue.URL + "/svc-serverless/image-lite/requests/" + id + "/status?logs=1", m.api.URL + "/v1/jobs/" + m.job(id).ID} {
			r := m.call(http.MethodGet, u, "")
			if r.Code != http.StatusOK {
				t.Fatalf("%s: %d %s", u, r.Code, r.Raw)
			}
			noServerWords(t, u, r.Raw)
		}
		if m.balance() != before {
			t.Fatalf("balance %d → %d: the failed job was not refunded", before, m.balance())
		}

		full.Store(false)
		if r := m.call(http.MethodGet, m.api.URL+"/readyz", ""); r.Code != http.StatusOK {
			t.Fatalf("readyz with room again: %d %s", r.Code, r.Raw)
		}
		if up := put(); up.Code != http.StatusOK {
			t.Fatalf("the same link once there is room: %d %s", up.Code, up.Raw)
		}
	})
}
