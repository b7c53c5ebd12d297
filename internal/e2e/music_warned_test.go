package e2e_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// TestINSHARED43_MusicWarnedRequestIsServed: on the queue host, before the enforcement date, a
// music-turbo request breaking an output rule of M5 (OGG sampleRate 44100, rule 3) is answered
// 200 with the Deprecation signal and a warning, runs to COMPLETED at the nearest rate Opus
// produces (48000 Hz, the file's OpusHead says so), and is charged once; its idempotency key
// then replays that job, uncharged, whatever body comes with it. An OGG bitrate past what Opus
// carries (100000 kbps) is served at 510 kbps and the result says 510. Proves IN-SHARED-43 (spec
// 02 "Versioning" #3) for M5 over HTTP, on both databases.
func TestINSHARED43_MusicWarnedRequestIsServed(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		m := newModelsHarness(t, db)
		model, ok := m.cat.Model("music-turbo")
		if !ok {
			t.Fatal("no music-turbo in the catalogue")
		}
		if now := m.clock.Now(); !now.Before(model.EnforcementDate()) {
			t.Skipf("the machine clock (%s) is past the catalogue's enforcement date (%s)", now, model.EnforcementDate())
		}
		serve := func(body, key, rule string) (resp, map[string]any) {
			t.Helper()
			before, n := m.balance(), m.countJobs()
			r := m.submit("music-turbo", "wait=300", body, "Idempotency-Key", key) // 30 s of Opus under -race on a busy machine can take over a minute
			if r.Code != http.StatusOK || r.str("status") != "COMPLETED" || r.Header.Get("Deprecation") == "" || !strings.Contains(r.Raw, `"rule":"`+rule+`"`) {
				t.Fatalf("warned request: %d %s (Deprecation %q)", r.Code, r.Raw, r.Header.Get("Deprecation"))
			}
			j := m.job(r.str("request_id"))
			q := r.num("credits_quoted")
			if j.Outcome != jobs.Succeeded || q <= 0 || j.Charged != q || m.balance() != before-q || m.countJobs() != n+1 {
				t.Fatalf("job %s charged %d of %d quoted; balance %d→%d, jobs %d→%d: want one job charged once",
					j.Outcome, j.Charged, q, before, m.balance(), n, m.countJobs())
			}
			res := m.call(http.MethodGet, r.str("response_url"), "")
			a, _ := res.Body["audio"].(map[string]any)
			if res.Code != http.StatusOK || a == nil {
				t.Fatalf("result: %d %s", res.Code, res.Raw)
			}
			return r, a
		}

		const body = `{"positivePrompt":"calm piano","duration":30,"outputFormat":"OGG","audioSettings":{"sampleRate":44100}}`
		first, a := serve(body, "music-44100", "audio_sample_rate")
		rate, ch, seconds := decodeAudio(t, "OGG", m.file(a), 30)
		if a["sample_rate"] != float64(48000) || rate != 48000 || ch != 2 || seconds != 30 {
			t.Fatalf("result %v; file %d Hz, %d ch, %.3f s: want 48000 Hz stereo, 30 s", a, rate, ch, seconds)
		}
		before := m.balance()
		again := m.submit("music-turbo", "wait=300", strings.Replace(body, "44100", "48000", 1), "Idempotency-Key", "music-44100")
		if again.Code != http.StatusOK || again.Body["replayed"] != true || again.str("request_id") != first.str("request_id") ||
			again.str("status") != "COMPLETED" || m.balance() != before {
			t.Fatalf("the key resent: %d %s (balance %d→%d)", again.Code, again.Raw, before, m.balance())
		}

		_, a = serve(`{"positivePrompt":"calm piano","duration":30,"outputFormat":"OGG","audioSettings":{"bitrate":100000}}`, "music-100000", "audio_bitrate")
		if a["bitrate"] != float64(510) || a["sample_rate"] != float64(48000) {
			t.Fatalf("result %v: want 510 kbps at 48000 Hz", a)
		}
		if size, _ := a["file_size"].(float64); size*8/30/1000 > 520 {
			t.Fatalf("the file is %.0f kbps; the result says %v", size*8/30/1000, a["bitrate"])
		}
	})
}
