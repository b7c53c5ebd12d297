package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/runners"
)

// memInputs serves url inputs from memory.
type memInputs map[string][]byte

func (m memInputs) Fetch(ctx context.Context, url string) ([]byte, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	d, ok := m[url]
	if !ok {
		return nil, "", errors.New("404 not found")
	}
	return d, "application/octet-stream", nil
}

// memOutputs stores output files in memory.
type memOutputs struct {
	mu    sync.Mutex
	files map[string]memFile
}

type memFile struct {
	contentType string
	data        []byte
}

func (m *memOutputs) Put(_ context.Context, name, contentType string, data []byte) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.files == nil {
		m.files = map[string]memFile{}
	}
	key := fmt.Sprintf("outputs/%d/%s", len(m.files), name)
	m.files[key] = memFile{contentType, bytes.Clone(data)}
	return key, nil
}

// memReporter records logs and progress; onProgress runs after each progress report.
type memReporter struct {
	mu         sync.Mutex
	logs       []string
	progress   []float64
	onProgress func(float64)
}

func (r *memReporter) Log(level, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, level+": "+msg)
}

func (r *memReporter) Progress(f float64) {
	r.mu.Lock()
	r.progress = append(r.progress, f)
	cb := r.onProgress
	r.mu.Unlock()
	if cb != nil {
		cb(f)
	}
}

// harness runs one image runner with in-memory inputs and outputs.
type harness struct {
	t   *testing.T
	in  memInputs
	out *memOutputs
	rep *memReporter
	reg runners.Registry
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	fixed := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	return &harness{
		t:   t,
		in:  memInputs{},
		out: &memOutputs{},
		rep: &memReporter{},
		reg: Images(Options{Now: func() time.Time { return fixed }}),
	}
}

func (h *harness) env() runners.Env {
	return runners.Env{Inputs: h.in, Outputs: h.out, Report: h.rep}
}

// run runs slug with input (marshalled to JSON) and fails the test on error.
func (h *harness) run(slug string, input map[string]any) runners.Result {
	h.t.Helper()
	res, err := h.try(context.Background(), slug, input)
	if err != nil {
		h.t.Fatalf("%s: %v", slug, err)
	}
	return res
}

func (h *harness) try(ctx context.Context, slug string, input map[string]any) (runners.Result, error) {
	h.t.Helper()
	raw, err := json.Marshal(input)
	if err != nil {
		h.t.Fatal(err)
	}
	rn, err := h.reg.For(slug)
	if err != nil {
		h.t.Fatal(err)
	}
	return rn.Run(ctx, runners.Job{ID: "photo_test", Slug: slug, Address: "svc-serverless/" + slug, Input: raw}, h.env())
}

// file returns the stored bytes of the single output file of res.
func (h *harness) file(res runners.Result) memFile {
	h.t.Helper()
	if len(res.Files) != 1 {
		h.t.Fatalf("want 1 output file, got %d", len(res.Files))
	}
	f, ok := h.out.files[res.Files[0].Key]
	if !ok {
		h.t.Fatalf("output %q not stored", res.Files[0].Key)
	}
	if f.contentType != res.Files[0].ContentType || int64(len(f.data)) != res.Files[0].Bytes {
		h.t.Fatalf("file record %+v does not match the stored file (%s, %d bytes)", res.Files[0], f.contentType, len(f.data))
	}
	return f
}

// decoded decodes the single output of res and checks its sniffed format.
func (h *harness) decoded(res runners.Result, wantFormat string) image.Image {
	h.t.Helper()
	f := h.file(res)
	img, format, err := image.Decode(bytes.NewReader(f.data))
	if err != nil {
		h.t.Fatalf("decode output: %v", err)
	}
	if format != wantFormat {
		h.t.Fatalf("output format %q, want %q", format, wantFormat)
	}
	return img
}

// pngBytes encodes img as PNG.
func pngBytes(t *testing.T, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// solid is a w x h image of one colour.
func solid(w, h int, c color.NRGBA) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = c.R, c.G, c.B, c.A
	}
	return img
}

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func nrgbaAt(img image.Image, x, y int) color.NRGBA {
	return color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
}
