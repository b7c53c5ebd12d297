package builtin

import (
	"bytes"
	"image"
	"image/jpeg"
	"testing"
)

// TestJPEGOfOpaqueImageReadsPixelsDirectly: a generated image (an opaque *image.NRGBA) is
// encoded as JPEG from its pixel bytes, not one pixel at a time through At (an allocation a
// pixel: a 1024x1024 image made a million), and gives the same file as the pixel-by-pixel
// encoding.
func TestJPEGOfOpaqueImageReadsPixelsDirectly(t *testing.T) {
	img := image.NewNRGBA(image.Rect(0, 0, 256, 256))
	for i := range img.Pix {
		img.Pix[i] = uint8(i * 7)
		if i%4 == 3 {
			img.Pix[i] = 0xff
		}
	}
	got, err := encodeImage(img, "JPG", 90)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := jpeg.Encode(&want, struct{ image.Image }{img}, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.data, want.Bytes()) {
		t.Fatalf("the JPEG differs from the pixel-by-pixel encoding (%d bytes, want %d)", len(got.data), want.Len())
	}
	allocs := testing.AllocsPerRun(3, func() {
		if _, err := encodeImage(img, "JPG", 90); err != nil {
			t.Fatal(err)
		}
	})
	if pixels := float64(256 * 256); allocs > pixels/100 {
		t.Fatalf("encoding a %v-pixel image allocated %v times", pixels, allocs)
	}
}
