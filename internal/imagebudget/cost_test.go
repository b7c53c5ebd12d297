package imagebudget

import (
	"bytes"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	gwebp "github.com/gen2brain/webp"
	xwebp "golang.org/x/image/webp"
)

// libwebp is the decoder the built-in runners read WEBP with (image.Decode).
func libwebp(r io.Reader) (image.Image, error) { return gwebp.Decode(r) }

// allocated is what decode allocated while it ran.
func allocated(t *testing.T, decode func() error) int64 {
	t.Helper()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := decode(); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	return int64(after.TotalAlloc - before.TotalAlloc)
}

// The estimate read from a file's header covers what the decoders the service uses allocate
// for it, and is not far above: a budget counted in it neither lets decodes pass it nor turns
// away what would fit.
func TestCostCoversWhatTheDecodersTake(t *testing.T) {
	type dec func(io.Reader) (image.Image, error)
	for _, tc := range []struct {
		file string
		form string
		decs []dec
	}{
		{"base420.jpg", "JPEG", []dec{jpeg.Decode}},
		{"base444.jpg", "JPEG", []dec{jpeg.Decode}},
		{"prog420.jpg", "progressive JPEG", []dec{jpeg.Decode}},
		{"gray_prog.jpg", "progressive JPEG", []dec{jpeg.Decode}},
		{"cmyk.jpg", "CMYK JPEG", []dec{jpeg.Decode}},
		{"progcmyk.jpg", "progressive CMYK JPEG", []dec{jpeg.Decode}},
		{"rgba.png", "PNG", []dec{png.Decode}},
		{"gray.png", "PNG", []dec{png.Decode}},
		{"rgb16.png", "16-bit PNG", []dec{png.Decode}},
		{"interlaced.png", "interlaced PNG", []dec{png.Decode}},
		{"gen.webp", "WEBP", []dec{xwebp.Decode, libwebp}},
		{"lossless.webp", "lossless WEBP", []dec{xwebp.Decode, libwebp}},
	} {
		data, err := os.ReadFile(filepath.Join("testdata", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		est := Cost(data, cfg.Width, cfg.Height)
		if est.Form != tc.form {
			t.Errorf("%s: form %q, want %q", tc.file, est.Form, tc.form)
		}
		var most int64 // the estimate covers the hungriest of the decoders reading the format
		for i, decode := range tc.decs {
			got := allocated(t, func() error { _, err := decode(bytes.NewReader(data)); return err })
			t.Logf("%s decoder %d: allocated %d, estimated %d (%d B/px)", tc.file, i, got, est.Bytes, est.PerPixel())
			if got > est.Bytes {
				t.Errorf("%s decoder %d allocated %d bytes, more than the %d estimated", tc.file, i, got, est.Bytes)
			}
			most = max(most, got)
		}
		if est.Bytes > 3*most+2<<20 {
			t.Errorf("%s: decoders allocated at most %d bytes, far less than the %d estimated", tc.file, most, est.Bytes)
		}
	}
}

// A large progressive CMYK JPEG of a single colour is a small file (277 KB) that Go's decoder
// would need about 420 MB to read: the estimate says so from the header alone.
func TestCostOfASmallFileThatDecodesLarge(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "huge_progcmyk.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	est := Cost(data[:4096], cfg.Width, cfg.Height)
	if est.Form != "progressive CMYK JPEG" || est.Bytes < 400<<20 || est.Bytes > 460<<20 {
		t.Fatalf("%d x %d: %+v", cfg.Width, cfg.Height, est)
	}
	if len(data) > 300<<10 {
		t.Fatalf("the fixture is %d bytes", len(data))
	}
}
