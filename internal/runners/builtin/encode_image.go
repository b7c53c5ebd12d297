package builtin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"image/png"

	"github.com/gen2brain/webp"

	"github.com/modelexec/modelexec/internal/runners"
)

// encoded is one encoded output image.
type encoded struct {
	data        []byte
	contentType string
	ext         string
}

// encodeImage encodes img as JPG (quality), PNG (lossless, alpha kept) or WEBP (lossy at
// quality, alpha kept). JPG has no transparency: a translucent image is flattened on white.
func encodeImage(img image.Image, format string, quality int) (encoded, error) {
	var buf bytes.Buffer
	switch format {
	case "PNG":
		enc := png.Encoder{CompressionLevel: png.DefaultCompression}
		if err := enc.Encode(&buf, img); err != nil {
			return encoded{}, fmt.Errorf("encode png: %w", err)
		}
		return encoded{buf.Bytes(), "image/png", "png"}, nil
	case "WEBP":
		if err := webp.Encode(&buf, img, webp.Options{Quality: quality, Method: 4}); err != nil {
			return encoded{}, fmt.Errorf("encode webp: %w", err)
		}
		return encoded{buf.Bytes(), "image/webp", "webp"}, nil
	default:
		if err := jpeg.Encode(&buf, flatten(img), &jpeg.Options{Quality: quality}); err != nil {
			return encoded{}, fmt.Errorf("encode jpeg: %w", err)
		}
		return encoded{buf.Bytes(), "image/jpeg", "jpg"}, nil
	}
}

// maxSide is the longest side a format holds: JPEG writes sizes in 16 bits, WEBP in 14.
func maxSide(format string) int {
	switch format {
	case "PNG":
		return 1 << 30
	case "WEBP":
		return 16383
	}
	return 65535
}

// fitsFormat refuses an output of w x h that format cannot hold (invalid_input at
// outputFormat: a value the runner cannot honour), before anything is encoded.
func fitsFormat(format string, w, h int) error {
	if m := maxSide(format); w > m || h > m {
		return refusal("invalid_input", fmt.Sprintf("a %s image is at most %d pixels a side; this output would be %dx%d: ask for outputFormat PNG", format, m, w, h), "outputFormat")
	}
	return nil
}

// flatten composites an image that may carry alpha over white. The JPEG encoder reads an
// *image.RGBA's pixels directly but any other image one pixel at a time through At, which
// allocates for each pixel: an opaque *image.NRGBA is handed over as the *image.RGBA it
// equals (with every alpha 255, the premultiplied and the plain pixels are the same bytes).
func flatten(img image.Image) image.Image {
	if o, ok := img.(interface{ Opaque() bool }); ok && o.Opaque() {
		if n, ok := img.(*image.NRGBA); ok {
			return &image.RGBA{Pix: n.Pix, Stride: n.Stride, Rect: n.Rect}
		}
		return img
	}
	b := img.Bounds()
	dst := image.NewRGBA(b)
	draw.Draw(dst, b, image.NewUniform(color.White), image.Point{}, draw.Src)
	draw.Draw(dst, b, img, b.Min, draw.Over)
	return dst
}

// errNoOutputStore is the cause of a run given no output store (a wiring fault).
var errNoOutputStore = errors.New("builtin: no output store configured")

// storeImage encodes img and stores it as name.<ext>; it returns the document entry and the
// file record.
func storeImage(ctx context.Context, env runners.Env, name string, img image.Image, format string, quality int) (map[string]any, runners.File, error) {
	if err := fitsFormat(format, img.Bounds().Dx(), img.Bounds().Dy()); err != nil {
		return nil, runners.File{}, err
	}
	enc, err := encodeImage(img, format, quality)
	if err != nil {
		return nil, runners.File{}, runners.Internal("Encoding the image", err)
	}
	if env.Outputs == nil {
		return nil, runners.File{}, runners.Internal("Storing the output", errNoOutputStore)
	}
	key, err := env.Outputs.Put(ctx, name+"."+enc.ext, enc.contentType, enc.data)
	if err != nil {
		if ctx.Err() != nil {
			return nil, runners.File{}, ctx.Err()
		}
		return nil, runners.File{}, runners.OutputNotStored(err)
	}
	b := img.Bounds()
	entry := map[string]any{
		"storage_key":  key,
		"width":        b.Dx(),
		"height":       b.Dy(),
		"content_type": enc.contentType,
		"file_size":    len(enc.data),
	}
	return entry, runners.File{Key: key, ContentType: enc.contentType, Bytes: int64(len(enc.data))}, nil
}
