package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-audio/wav"
	"github.com/mewkiz/flac"
	"github.com/thesyncim/gopus"
	"github.com/thesyncim/gopus/container/ogg"
	"golang.org/x/image/webp"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/blobs"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/plans"
	"github.com/modelexec/modelexec/internal/server"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// modelsHarness is the service wired the way cmd/modelexec serve build() does, with the real
// built-in runners, an in-memory blob bucket, the signer and the account API (uploads and the
// signed /files/ links) over httptest servers.
type modelsHarness struct {
	*harness
	api *httptest.Server
}

func newModelsHarness(t *testing.T, db *sqlstore.DB) *modelsHarness {
	t.Helper()
	return newModelsHarnessOn(t, db, blobs.NewMemory(), nil)
}

// newModelsHarnessOn is newModelsHarness keeping files in bucket, with edit (when not nil)
// applied to the server's configuration.
func newModelsHarnessOn(t *testing.T, db *sqlstore.DB, bucket *blobs.Bucket, edit func(*server.Config)) *modelsHarness {
	t.Helper()
	return newModelsHarnessPlans(t, db, bucket, edit, nil)
}

// newModelsHarnessPlans is newModelsHarnessOn with the plan figures p (the built-in ones when
// nil), as `serve --plans` gives them.
func newModelsHarnessPlans(t *testing.T, db *sqlstore.DB, bucket *blobs.Bucket, edit func(*server.Config), p *plans.Plans) *modelsHarness {
	t.Helper()
	h := &harness{t: t, db: db, clock: &clock{}, runner: newCtlRunner()}
	var queueH, syncH, apiH http.Handler
	h.queue = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { queueH.ServeHTTP(w, r) }))
	h.sync = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { syncH.ServeHTTP(w, r) }))
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { apiH.ServeHTTP(w, r) }))
	t.Cleanup(api.Close)
	t.Cleanup(h.sync.Close)
	t.Cleanup(h.queue.Close)
	t.Cleanup(func() { _ = bucket.Close() })
	h.auth = auth.NewService(db, auth.Format{Prefix: "svc_sk_"}, auth.NewHasher(secret), h.clock.Now, quietLog())
	cfg := server.Config{Roles: server.Every(), Secret: secret, NoRateLimits: true,
		PublicURLAPI: api.URL, PublicURLQueue: h.queue.URL, PublicURLSync: h.sync.URL}
	if edit != nil {
		edit(&cfg)
	}
	srv, err := server.New(context.Background(), cfg, server.Deps{DB: db, Auth: h.auth, Now: h.clock.Now, Log: quietLog(), Bucket: bucket, Plans: p})
	if err != nil {
		t.Fatal(err)
	}
	h.cat, h.jobs = srv.Catalog(), srv.Jobs()
	queueH, syncH, apiH = srv.Handler(server.RoleQueue), srv.Handler(server.RoleSync), srv.Handler(server.RoleAPI)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = h.jobs.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; h.jobs.Drain() })
	h.account, h.key = h.newAccount("acct_models", auth.Pro, 1_000_000, nil)
	return &modelsHarness{harness: h, api: api}
}

// with is m reporting to t (a subtest).
func (m *modelsHarness) with(t *testing.T) *modelsHarness {
	h := *m.harness
	h.t = t
	return &modelsHarness{harness: &h, api: m.api}
}

// upload sends data through POST /v1/uploads and the signed PUT; it returns the read URL.
func (m *modelsHarness) upload(contentType string, data []byte) string {
	m.t.Helper()
	r := m.call(http.MethodPost, m.api.URL+"/v1/uploads", fmt.Sprintf(`{"content_type":%q,"product":"photo"}`, contentType))
	if r.Code != http.StatusCreated || r.str("upload_url") == "" || r.str("read_url") == "" {
		m.t.Fatalf("POST /v1/uploads: %d %s", r.Code, r.Raw)
	}
	req, err := http.NewRequest(r.str("method"), r.str("upload_url"), bytes.NewReader(data))
	if err != nil {
		m.t.Fatal(err)
	}
	hdr, _ := r.Body["headers"].(map[string]any)
	for k, v := range hdr {
		req.Header.Set(k, fmt.Sprint(v))
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		m.t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode/100 != 2 {
		m.t.Fatalf("PUT upload: %d %s", res.StatusCode, body)
	}
	// ERR-06: the stored file's answer carries the request id of its header, as every answer does.
	var put struct {
		RequestID string `json:"request_id"`
	}
	if json.Unmarshal(body, &put) != nil || put.RequestID == "" || put.RequestID != res.Header.Get("X-Request-Id") {
		m.t.Fatalf("PUT upload answer without its request_id: %s (X-Request-Id %q)", body, res.Header.Get("X-Request-Id"))
	}
	return r.str("read_url")
}

// viaQueue submits body to slug on the queue host with ?wait=60 and reads the result.
func (m *modelsHarness) viaQueue(slug string, body any) map[string]any {
	m.t.Helper()
	raw, _ := json.Marshal(body)
	r := m.submit(slug, "wait=60", string(raw))
	if r.Code != http.StatusOK || r.str("status") != "COMPLETED" {
		m.t.Fatalf("%s queue submit: %d %s", slug, r.Code, r.Raw)
	}
	res := m.call(http.MethodGet, r.str("response_url"), "")
	if res.Code != http.StatusOK {
		m.t.Fatalf("%s result: %d %s", slug, res.Code, res.Raw)
	}
	if j := m.job(r.str("request_id")); j.Outcome != jobs.Succeeded {
		m.t.Fatalf("%s job outcome %s", slug, j.Outcome)
	}
	return res.Body
}

// viaSync runs body on slug through the synchronous host.
func (m *modelsHarness) viaSync(slug string, body any) map[string]any {
	m.t.Helper()
	raw, _ := json.Marshal(body)
	r := m.call(http.MethodPost, m.sync.URL+"/svc-serverless/"+slug, string(raw))
	if r.Code != http.StatusOK {
		m.t.Fatalf("%s sync run: %d %s", slug, r.Code, r.Raw)
	}
	return r.Body
}

// file fetches one signed URL of a result document (no key: the signature is the credential).
func (m *modelsHarness) file(entry map[string]any) []byte {
	m.t.Helper()
	u, _ := entry["url"].(string)
	if u == "" {
		m.t.Fatalf("result entry without url: %v", entry)
	}
	if _, ok := entry["storage_key"]; ok {
		m.t.Fatalf("result entry leaks storage_key: %v", entry)
	}
	res, err := http.Get(u)
	if err != nil {
		m.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		m.t.Fatalf("GET %s: %d %s", u, res.StatusCode, data)
	}
	if ct := res.Header.Get("Content-Type"); ct != entry["content_type"] {
		m.t.Fatalf("GET %s: Content-Type %q, document says %v", u, ct, entry["content_type"])
	}
	return data
}

// firstImage is images[0] of a result document, decoded by its declared format; it checks
// the bytes are that format and the size is the asked one.
func (m *modelsHarness) firstImage(doc map[string]any, key, format string, w, h int) image.Image {
	m.t.Helper()
	var entry map[string]any
	switch v := doc[key].(type) {
	case []any:
		if len(v) > 0 {
			entry, _ = v[0].(map[string]any)
		}
	case map[string]any:
		entry = v
	}
	if entry == nil {
		m.t.Fatalf("result has no %s: %s", key, prettyBody(doc))
	}
	want := map[string]string{"JPG": "image/jpeg", "PNG": "image/png", "WEBP": "image/webp"}[format]
	if entry["content_type"] != want {
		m.t.Fatalf("%s content_type %v, want %s", key, entry["content_type"], want)
	}
	data := m.file(entry)
	if got := http.DetectContentType(data); got != want {
		m.t.Fatalf("bytes sniff as %s, want %s", got, want)
	}
	var img image.Image
	var err error
	switch format {
	case "JPG":
		img, err = jpeg.Decode(bytes.NewReader(data))
	case "PNG":
		img, err = png.Decode(bytes.NewReader(data))
	case "WEBP":
		img, err = webp.Decode(bytes.NewReader(data))
	}
	if err != nil {
		m.t.Fatalf("decode %s: %v", format, err)
	}
	if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
		m.t.Fatalf("%s image is %dx%d, want %dx%d", format, b.Dx(), b.Dy(), w, h)
	}
	if entry["width"] != float64(w) || entry["height"] != float64(h) {
		m.t.Fatalf("document says %vx%v, want %dx%d", entry["width"], entry["height"], w, h)
	}
	return img
}

func rgba(img image.Image, x, y int) color.NRGBA {
	return color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
}

func encodePNG(t *testing.T, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// halves is a w x h image, its left half pure red and its right half pure blue.
func halves(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c := color.NRGBA{255, 0, 0, 255}
			if x >= w/2 {
				c = color.NRGBA{0, 0, 255, 255}
			}
			img.SetNRGBA(x, y, c)
		}
	}
	return img
}

// TestINM1toM9_ACC18_EveryModelEndToEnd submits a representative request for each of the
// nine models over HTTP (queue host with ?wait=60; M2, M4 and M9 also or only through the
// synchronous host), fetches each output through its signed URL and decodes it (issue 5,
// first "Done when" bullet): image sizes and formats (JPG, PNG and WEBP), a text watermark
// where displayPosition says, the exact upscaled size, the eye mask of a real photograph
// over its eyes, M7 editing of an uploaded reference at the asked size, M8 inpainting with
// uploaded seedImage and maskImage, and M5 music in MP3, WAV, FLAC and OGG decoding to the
// asked duration, channels and sample rate. Inputs are uploaded through POST /v1/uploads and
// the signed PUT, and their read URLs used as url inputs.
// Proves IN-M1-02, IN-M2-04, IN-M2-13, IN-M3-05, IN-M4 (upscaleFactor, inputs.image),
// IN-M5 (duration, outputFormat, audioSettings), IN-M6 (inputs.image, mask), IN-M7
// (referenceImages, size), IN-M8 (seedImage, maskImage), IN-M9 (size, outputFormat),
// IN-SHARED-12 (displayPosition), ACC-18. On SQLite and PostgreSQL (about 2.5 s each).
func TestINM1toM9_ACC18_EveryModelEndToEnd(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) { testEveryModel(t, newModelsHarness(t, db)) })
}

func testEveryModel(t *testing.T, m *modelsHarness) {
	start := time.Now()

	// Inputs, uploaded: a red|blue reference, an inpainting mask (top white, bottom black),
	// and the astronaut photograph shipped with the built-in runners' tests.
	ref := m.upload("image/png", encodePNG(t, halves(40, 30)))
	maskImg := image.NewGray(image.Rect(0, 0, 40, 40))
	for y := range 20 {
		for x := range 40 {
			maskImg.SetGray(x, y, color.Gray{255})
		}
	}
	mask := m.upload("image/png", encodePNG(t, maskImg))
	face, err := os.ReadFile(filepath.Join("..", "runners", "builtin", "testdata", "astronaut.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	faceURL := m.upload("image/jpeg", face)

	t.Run("M1_image-9b-kv_WEBP", func(t *testing.T) {
		m := m.with(t)
		doc := m.viaQueue("image-9b-kv", map[string]any{"positivePrompt": "a sunset over the ocean", "width": 320, "height": 192,
			"seed": 1, "steps": 2, "outputFormat": "WEBP", "outputQuality": 80})
		m.firstImage(doc, "images", "WEBP", 320, 192)
	})

	t.Run("M2_image-4b_watermark_sync_and_queue", func(t *testing.T) {
		m := m.with(t)
		in := map[string]any{"positivePrompt": "a quiet forest", "width": 240, "height": 160, "seed": 8, "steps": 1, "outputFormat": "PNG"}
		plain := m.firstImage(m.viaSync("image-4b", in), "images", "PNG", 240, 160)
		in["advancedFeatures"] = map[string]any{"watermark": map[string]any{"text": "Hi there", "displayPosition": "top-left",
			"fontColor": "#0000FF", "bgColor": "#FF0000", "opacity": 1}}
		marked := m.firstImage(m.viaQueue("image-4b", in), "images", "PNG", 240, 160)
		// Same seed: the two runs differ only by the watermark.
		var box image.Rectangle
		n := 0
		for y := range 160 {
			for x := range 240 {
				if rgba(plain, x, y) != rgba(marked, x, y) {
					box = box.Union(image.Rect(x, y, x+1, y+1))
					n++
				}
			}
		}
		if n == 0 {
			t.Fatal("the watermark changed no pixel")
		}
		if box.Max.X > 240/2 || box.Max.Y > 160/2 || box.Min.X > 10 || box.Min.Y > 10 {
			t.Fatalf("watermark box %v is not at the top left of 240x160", box)
		}
		// Every changed pixel is in the top-left quadrant (the opposite corner is untouched);
		// the box is the bgColor with text in fontColor.
		if got := rgba(marked, box.Min.X+1, box.Min.Y+1); got != (color.NRGBA{255, 0, 0, 255}) {
			t.Fatalf("watermark background %v, want #FF0000", got)
		}
		blue := 0
		for y := box.Min.Y; y < box.Max.Y; y++ {
			for x := box.Min.X; x < box.Max.X; x++ {
				if c := rgba(marked, x, y); c.B > 200 && c.R < 60 {
					blue++
				}
			}
		}
		if blue < 20 {
			t.Fatalf("only %d text pixels in fontColor", blue)
		}
	})

	t.Run("M3_image-lite_JPG", func(t *testing.T) {
		m := m.with(t)
		doc := m.viaQueue("image-lite", map[string]any{"positivePrompt": "night sky", "width": 1024, "height": 1024, "seed": 3, "steps": 10})
		m.firstImage(doc, "images", "JPG", 1024, 1024)
	})

	t.Run("M4_upscale_exact_sync", func(t *testing.T) {
		m := m.with(t)
		doc := m.viaSync("upscale", map[string]any{"upscaleFactor": 2.5, "outputFormat": "PNG", "inputs": map[string]any{"image": ref}})
		img := m.firstImage(doc, "images", "PNG", 100, 75)
		if c := rgba(img, 10, 37); c.R < 200 || c.B > 50 {
			t.Fatalf("upscaled left half %v, want red", c)
		}
		if c := rgba(img, 90, 37); c.B < 200 || c.R > 50 {
			t.Fatalf("upscaled right half %v, want blue", c)
		}
	})

	t.Run("M5_music-turbo_four_formats", func(t *testing.T) {
		m := m.with(t)
		const dur = 30.0
		cases := []struct {
			format   string
			audio    map[string]any
			rate, ch int
			ct       string
		}{
			{"MP3", map[string]any{"channels": 1, "sampleRate": 22050, "bitrate": 64}, 22050, 1, "audio/mpeg"},
			{"WAV", nil, 44100, 2, "audio/wav"},
			{"FLAC", nil, 44100, 2, "audio/flac"},
			{"OGG", map[string]any{"channels": 1, "sampleRate": 16000, "bitrate": 32}, 16000, 1, "audio/ogg"},
		}
		for _, c := range cases {
			t.Run(c.format, func(t *testing.T) {
				m := m.with(t)
				in := map[string]any{"positivePrompt": "an upbeat synth tune", "duration": dur, "seed": 7, "steps": 2, "outputFormat": c.format}
				if c.audio != nil {
					in["audioSettings"] = c.audio
				}
				doc := m.viaQueue("music-turbo", in)
				a, _ := doc["audio"].(map[string]any)
				if a == nil || a["content_type"] != c.ct {
					t.Fatalf("audio entry %v, want %s", a, c.ct)
				}
				data := m.file(a)
				rate, ch, seconds := decodeAudio(t, c.format, data, dur)
				if rate != c.rate || ch != c.ch {
					t.Fatalf("decoded %d Hz %d ch, want %d Hz %d ch", rate, ch, c.rate, c.ch)
				}
				if math.Abs(seconds-dur) > 1e-6 {
					t.Fatalf("decoded %.6f s, want %.0f s", seconds, dur)
				}
			})
		}
	})

	t.Run("M6_eye-mask_real_face", func(t *testing.T) {
		m := m.with(t)
		doc := m.viaQueue("eye-mask", map[string]any{"inputs": map[string]any{"image": faceURL}, "outputFormat": "PNG"})
		img := m.firstImage(doc, "masks", "PNG", 512, 512)
		for _, p := range []image.Point{{204, 101}, {246, 103}} {
			if v := rgba(img, p.X, p.Y).R; v < 200 {
				t.Fatalf("eye %v is %d in the mask, want white", p, v)
			}
		}
		for _, p := range []image.Point{{5, 5}, {506, 5}, {5, 506}, {506, 506}, {225, 135}} {
			if v := rgba(img, p.X, p.Y).R; v > 40 {
				t.Fatalf("%v is %d in the mask, want black", p, v)
			}
		}
	})

	t.Run("M7_image-edit_uploaded_reference", func(t *testing.T) {
		m := m.with(t)
		doc := m.viaQueue("image-edit", map[string]any{"positivePrompt": "warm", "width": 256, "height": 192, "seed": 2, "steps": 1,
			"inputs": map[string]any{"referenceImages": []string{ref}}})
		img := m.firstImage(doc, "images", "JPG", 256, 192)
		// A transformation of the reference: its red left and blue right survive the grade.
		l, r := rgba(img, 40, 96), rgba(img, 216, 96)
		if int(l.R)-int(l.B) < 60 || int(r.B)-int(r.R) < 60 {
			t.Fatalf("edited image left %v right %v: not the red|blue reference", l, r)
		}
	})

	t.Run("M8_image-dev_seed_and_mask", func(t *testing.T) {
		m := m.with(t)
		doc := m.viaQueue("image-dev", map[string]any{"positivePrompt": "a quiet forest", "width": 256, "height": 256, "seed": 4, "steps": 2,
			"outputFormat": "PNG", "strength": 1, "inputs": map[string]any{"seedImage": ref, "maskImage": mask}})
		img := m.firstImage(doc, "images", "PNG", 256, 256)
		// Black (bottom) preserved: the seed image scaled to the canvas; white (top) edited.
		if c := rgba(img, 40, 230); c.R < 200 || c.G > 50 || c.B > 50 {
			t.Fatalf("preserved left %v, want the seed's red", c)
		}
		if c := rgba(img, 216, 230); c.B < 200 || c.R > 50 || c.G > 50 {
			t.Fatalf("preserved right %v, want the seed's blue", c)
		}
		changed := 0
		for _, p := range []image.Point{{40, 20}, {216, 20}, {128, 40}, {20, 60}, {236, 60}} {
			c := rgba(img, p.X, p.Y)
			if c != (color.NRGBA{255, 0, 0, 255}) && c != (color.NRGBA{0, 0, 255, 255}) {
				changed++
			}
		}
		if changed < 5 {
			t.Fatalf("only %d of 5 edited pixels differ from the seed", changed)
		}
	})

	t.Run("M9_image-turbo_JPG_sync", func(t *testing.T) {
		m := m.with(t)
		doc := m.viaSync("image-turbo", map[string]any{"positivePrompt": "ocean", "width": 384, "height": 256, "seed": 9, "steps": 2, "outputFormat": "JPG"})
		m.firstImage(doc, "images", "JPG", 384, 256)
	})

	checkBooks(t, m.db)
	t.Logf("nine models end to end in %v", time.Since(start).Round(time.Millisecond))
}

// decodeAudio decodes data in format and returns the sample rate, channels and playable
// seconds (OGG: the OpusHead input rate; MP3: whole frames, at most one past the asked end).
func decodeAudio(t *testing.T, format string, data []byte, want float64) (rate, ch int, seconds float64) {
	t.Helper()
	switch format {
	case "WAV":
		d := wav.NewDecoder(bytes.NewReader(data))
		buf, err := d.FullPCMBuffer()
		if err != nil {
			t.Fatal(err)
		}
		rate, ch = int(d.SampleRate), int(d.NumChans)
		return rate, ch, float64(len(buf.Data)/ch) / float64(rate)
	case "FLAC":
		st, err := flac.New(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for {
			f, err := st.ParseNext()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			n += int(f.BlockSize)
		}
		if uint64(n) != st.Info.NSamples {
			t.Fatalf("flac: streaminfo %d frames, decoded %d", st.Info.NSamples, n)
		}
		return int(st.Info.SampleRate), int(st.Info.NChannels), float64(n) / float64(st.Info.SampleRate)
	case "OGG":
		r, err := ogg.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		ch = int(r.Channels())
		dec, err := gopus.NewDecoder(gopus.DefaultDecoderConfig(48000, ch))
		if err != nil {
			t.Fatal(err)
		}
		pcm := make([]float32, 5760*ch)
		var last uint64
		frames := 0
		for {
			pkt, granule, err := r.ReadPacket()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			last = granule
			n, err := dec.Decode(pkt, pcm)
			if err != nil {
				t.Fatal(err)
			}
			frames += n
		}
		playable := int(last) - int(r.PreSkip())
		if playable < 0 || int(r.PreSkip())+playable > frames {
			t.Fatalf("opus: granule %d, pre-skip %d, decoded %d frames", last, r.PreSkip(), frames)
		}
		return int(r.SampleRate()), ch, float64(playable) / 48000
	case "MP3":
		frames, spp := 0, 0
		rates := map[int][3]int{3: {44100, 48000, 32000}, 2: {22050, 24000, 16000}, 0: {11025, 12000, 8000}}
		brV1 := []int{0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320}
		brV2 := []int{0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160}
		for off := 0; off < len(data); frames++ {
			if off+4 > len(data) || data[off] != 0xFF || data[off+1]&0xE0 != 0xE0 || (data[off+1]>>1)&3 != 1 {
				t.Fatalf("mp3: no Layer III frame sync at %d of %d", off, len(data))
			}
			ver, bi, si, pad := int(data[off+1]>>3)&3, int(data[off+2]>>4), int(data[off+2]>>2)&3, int(data[off+2]>>1)&1
			r, c := rates[ver][si], 2
			if data[off+3]>>6 == 3 {
				c = 1
			}
			if frames == 0 {
				rate, ch = r, c
			} else if r != rate || c != ch {
				t.Fatalf("mp3: frame %d changes format", frames)
			}
			if ver == 3 {
				spp = 1152
				off += 144*brV1[bi]*1000/r + pad
			} else {
				spp = 576
				off += 72*brV2[bi]*1000/r + pad
			}
		}
		seconds = float64(frames*spp) / float64(rate)
		if seconds < want || seconds > want+float64(spp)/float64(rate) {
			t.Fatalf("mp3: %d frames = %.4f s", frames, seconds)
		}
		return rate, ch, want // whole frames: the asked duration within one frame
	}
	t.Fatalf("unknown format %s", format)
	return 0, 0, 0
}
