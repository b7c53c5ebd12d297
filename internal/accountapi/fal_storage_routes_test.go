package accountapi_test

import (
	"testing"

	"github.com/modelexec/modelexec/internal/accountapi"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// TestACC16_ACC17_FalStorageUpload: fal's upload protocol (what fal.storage.upload and
// Blob inputs speak) is POST /v1/uploads under fal's names: 200 {upload_url, file_url},
// the same content types and scope; the bytes PUT to upload_url read back at file_url,
// which a model takes as a url input (ACC-18).
func TestACC16_ACC17_FalStorageUpload(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e := newAccEnv(t, db)
		key := e.account("acct_fal")
		audio := e.account("acct_fal_audio", auth.AudioWrite)
		initiate := func(key, body string) accAnswer {
			return e.call("POST", accountapi.FalInitiatePath+"?storage_type=fal-cdn-v3", key, []byte(body), "Content-Type", "application/json")
		}
		a := initiate(key, `{"content_type":"image/png","file_name":"tiny.png"}`)
		e.want(a, 200, "")
		up, _ := a.body["upload_url"].(string)
		file, _ := a.body["file_url"].(string)
		if up == "" || file == "" {
			t.Fatalf("initiate = %s", a.raw)
		}
		img := pngBytes(t, 8, 6)
		if put := e.call("PUT", up, "", img, "Content-Type", "image/png"); put.status != 200 {
			t.Fatalf("PUT = %d %s", put.status, put.raw)
		}
		if got := e.call("GET", file, "", nil); got.status != 200 || string(got.raw) != string(img) {
			t.Fatalf("GET file_url = %d", got.status)
		}
		j := e.settle(e.submit(key, "upscale", `{"inputs":{"image":"`+file+`"},"upscaleFactor":2,"outputFormat":"PNG"}`, "falup1"))
		if j.Outcome != jobs.Succeeded {
			t.Fatalf("upscale of the fal upload: %+v", j)
		}

		e.want(initiate(key, `{"content_type":"application/octet-stream","file_name":"x.bin"}`), 400, "unknown_content_type")
		e.want(initiate(audio, `{"content_type":"image/png","file_name":"x.png"}`), 403, "insufficient_scope")
		e.want(initiate("", `{"content_type":"image/png"}`), 401, "missing_authorization")
	})
}
