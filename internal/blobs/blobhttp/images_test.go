package blobhttp_test

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"testing"

	"github.com/gen2brain/webp"
)

// testImage is a small image of two colours, different for each seed.
func testImage(seed uint8) image.Image {
	img := image.NewNRGBA(image.Rect(0, 0, 4, 3))
	for x := range 4 {
		for y := range 3 {
			img.Set(x, y, color.NRGBA{R: seed, G: uint8(x * 60), B: uint8(y * 80), A: 255})
		}
	}
	return img
}

// imageFile is a whole file of contentType holding testImage(seed).
func imageFile(t testing.TB, contentType string, seed uint8) []byte {
	t.Helper()
	var b bytes.Buffer
	var err error
	switch contentType {
	case "image/png":
		err = png.Encode(&b, testImage(seed))
	case "image/jpeg":
		err = jpeg.Encode(&b, testImage(seed), nil)
	case "image/webp":
		err = webp.Encode(&b, testImage(seed), webp.Options{Quality: 80})
	default:
		t.Fatalf("no test file of %s", contentType)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
