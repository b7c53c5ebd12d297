package blobs

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/png"
	"io"
	"testing"
)

// pngHeader is a PNG signature and an IHDR chunk declaring w x h RGBA pixels, and nothing else.
func pngHeader(w, h uint32) []byte {
	data := make([]byte, 13)
	binary.BigEndian.PutUint32(data[0:], w)
	binary.BigEndian.PutUint32(data[4:], h)
	data[8], data[9] = 8, 6 // 8 bits, RGBA
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	_ = binary.Write(&b, binary.BigEndian, uint32(len(data)))
	chunk := append([]byte("IHDR"), data...)
	b.Write(chunk)
	_ = binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(chunk))
	return b.Bytes()
}

// TestVerifierReader: a whole image passes through unchanged; an image declaring more than
// MaxVerifyPixels is refused from its header, before any pixel is held; a reader closed before
// its end stops the decode; a type without a decoder passes as it is.
func TestVerifierReader(t *testing.T) {
	v := NewVerifier(1)
	var good bytes.Buffer
	if err := png.Encode(&good, image.NewGray(image.Rect(0, 0, 3, 2))); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(v.Reader(context.Background(), "image/png", bytes.NewReader(good.Bytes())))
	if err != nil || !bytes.Equal(got, good.Bytes()) {
		t.Fatalf("a whole PNG: %v (%d of %d bytes)", err, len(got), good.Len())
	}
	bomb := append(pngHeader(100_000, 100_000), make([]byte, 4096)...)
	if _, err := io.ReadAll(v.Reader(context.Background(), "image/png", bytes.NewReader(bomb))); !errors.Is(err, ErrBytesNotDeclaredType) {
		t.Fatalf("a PNG of 10^10 pixels: %v", err)
	}
	r := v.Reader(context.Background(), "image/png", bytes.NewReader(good.Bytes()))
	if _, err := r.Read(make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	// The slot was given back: another decode runs.
	if _, err := io.ReadAll(v.Reader(context.Background(), "image/png", bytes.NewReader(good.Bytes()))); err != nil {
		t.Fatalf("after an abandoned decode: %v", err)
	}
	if got, err := io.ReadAll(v.Reader(context.Background(), "text/plain", bytes.NewReader([]byte("hi")))); err != nil || string(got) != "hi" {
		t.Fatalf("text/plain: %q %v", got, err)
	}
}
