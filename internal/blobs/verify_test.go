package blobs

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"github.com/modelexec/modelexec/internal/imagebudget"
	"hash/crc32"
	"image"
	"image/png"
	"io"
	"testing"
	"time"
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
	v := NewVerifier(imagebudget.Default())
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
	// The pixels were given back: another decode runs.
	if _, err := io.ReadAll(v.Reader(context.Background(), "image/png", bytes.NewReader(good.Bytes()))); err != nil {
		t.Fatalf("after an abandoned decode: %v", err)
	}
	if got, err := io.ReadAll(v.Reader(context.Background(), "text/plain", bytes.NewReader([]byte("hi")))); err != nil || string(got) != "hi" {
		t.Fatalf("text/plain: %q %v", got, err)
	}
}

// TestVerifierBudget: a large image whose upload stalls holds no share of the verifier's
// budget: other images decode beside it, and the large one still ends when its reader is
// closed.
func TestVerifierBudget(t *testing.T) {
	v := NewVerifier(imagebudget.Default())
	slow, feed := io.Pipe()
	big := v.Reader(context.Background(), "image/png", slow)
	go func() { _, _ = feed.Write(pngHeader(6000, 6000)) }() // 36 Mpx declared, then nothing
	head := make([]byte, 33)
	if _, err := io.ReadFull(big, head); err != nil {
		t.Fatal(err)
	}
	var small bytes.Buffer
	if err := png.Encode(&small, image.NewGray(image.Rect(0, 0, 4, 4))); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(v.Reader(context.Background(), "image/png", bytes.NewReader(small.Bytes()))); err != nil {
		t.Fatalf("a small image beside a stalled large one: %v", err)
	}
	// An image that with the stalled one's pixels would pass the budget decodes too: a stalled
	// upload holds no pixels until its file is whole (the deadline fails the test if it waits).
	var mid bytes.Buffer
	if err := png.Encode(&mid, image.NewGray(image.Rect(0, 0, 3000, 3000))); err != nil { // 9 Mpx
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := io.ReadAll(v.Reader(ctx, "image/png", bytes.NewReader(mid.Bytes()))); err != nil {
		t.Fatalf("an image the budget holds only beside a stalled upload's pixels: %v", err)
	}
	_ = feed.CloseWithError(io.ErrUnexpectedEOF)
	if _, err := io.ReadAll(big); err == nil {
		t.Fatal("a cut-off upload passed")
	}
	_ = big.Close()
}
