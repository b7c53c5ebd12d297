package blobs

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"slices"
	"strings"

	"github.com/modelexec/modelexec/internal/imagebudget"
	"golang.org/x/image/webp"
)

// MaxVerifyPixels is the largest image an upload may declare (width × height); an image read
// by a model is held to the same bound.
const MaxVerifyPixels = 40 << 20

// imageCodec decodes one content type: its header first (to refuse an image too large to
// decode before any pixel is held), then the whole file.
type imageCodec struct {
	config func(io.Reader) (image.Config, error)
	decode func(io.Reader) (image.Image, error)
	// end judges the bytes the decoder left unread (a file appended to an image), given the
	// file's first bytes and its length; nil takes them.
	end func(head []byte, size, unread int) error
}

var imageCodecs = map[string]imageCodec{
	"image/png": {png.DecodeConfig, png.Decode, nothingAfter},
	// The JPEG decoder reads ahead, and JPEG files from some cameras carry data after their end.
	"image/jpeg": {jpeg.DecodeConfig, jpeg.Decode, nil},
	"image/webp": {webp.DecodeConfig, webp.Decode, riffEnds},
}

// nothingAfter refuses any byte after the image: the PNG decoder reads to the IEND chunk.
func nothingAfter(_ []byte, _, unread int) error {
	if unread > 0 {
		return fmt.Errorf("%d bytes after the end of the image", unread)
	}
	return nil
}

// riffEnds refuses a WebP file that does not end where its RIFF header says. The decoder stops
// after the image's chunk, and a WebP file may go on with metadata chunks (EXIF, XMP) and the
// pad byte of an odd-length chunk, all inside the RIFF size.
func riffEnds(head []byte, size, _ int) error {
	if len(head) < 8 {
		return fmt.Errorf("no RIFF header")
	}
	if riff := int64(binary.LittleEndian.Uint32(head[4:8])) + 8; riff != int64(size) {
		return fmt.Errorf("the RIFF container says %d bytes, the file has %d", riff, size)
	}
	return nil
}

// Verifier decodes uploaded images in full while they stream to the store, so that a file
// whose first bytes carry the right signature but whose rest is something else (a PNG
// signature followed by HTML) is never kept. Decoding takes memory, so the images being
// decoded at once stay within the process's image budget, each counted from its header: small
// images decode side by side, a large one waits for room (and its upload with it), and one
// whose decoding alone would pass what an image may take is refused before its rest is read.
type Verifier struct{ budget *imagebudget.Budget }

// NewVerifier returns a Verifier decoding within budget.
func NewVerifier(budget *imagebudget.Budget) *Verifier {
	return &Verifier{budget: budget}
}

// Reader passes r through and, at its end, answers ErrBytesNotDeclaredType instead of io.EOF
// when the bytes read are not one whole readable file of contentType (of a type it has no
// decoder for, the bytes pass as they are). A decode that fails early ends the reading at
// once. A store's Create that reads it therefore keeps nothing that is not what it declares.
// Close it once the store is done with it: that ends the decode of an upload cut short.
func (v *Verifier) Reader(ctx context.Context, contentType string, r io.Reader) io.ReadCloser {
	codec, ok := imageCodecs[strings.ToLower(strings.TrimSpace(contentType))]
	if !ok {
		return io.NopCloser(r)
	}
	pr, pw := io.Pipe()
	vr := &verifyingReader{src: r, pw: pw, verdict: make(chan error, 1)}
	go func() {
		err := v.decode(ctx, codec, pr)
		if err != nil {
			pr.CloseWithError(err) // a refusal ends the writes at once
		}
		vr.verdict <- err
	}()
	return vr
}

// decode reads the header, refuses a size beyond MaxVerifyPixels, reads the rest of the file,
// refuses a decode beyond what one image may take, then decodes it once the budget has room.
// The file is whole before the budget is asked: an upload whose sender stalls holds its own
// bytes, never the room the other uploads decode in.
func (v *Verifier) decode(ctx context.Context, codec imageCodec, r io.Reader) error {
	head := &recorder{r: r}
	cfg, err := codec.config(head)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBytesNotDeclaredType, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return fmt.Errorf("%w: %dx%d", ErrBytesNotDeclaredType, cfg.Width, cfg.Height)
	}
	if int64(cfg.Width)*int64(cfg.Height) > MaxVerifyPixels {
		return &ImageTooLargeError{Width: cfg.Width, Height: cfg.Height}
	}
	rest, err := io.ReadAll(r) // as long as the upload, which its link bounds
	if err != nil {
		return err
	}
	// The cost is read from the file's first bytes (a WEBP's image chunk may follow metadata).
	peek := append(slices.Clip(head.buf), rest[:min(len(rest), 64<<10)]...)
	release, err := v.budget.Acquire(ctx, imagebudget.Cost(peek, cfg.Width, cfg.Height))
	if costly := (*imagebudget.TooCostlyError)(nil); errors.As(err, &costly) {
		return fmt.Errorf("%w: %w", ErrBytesNotDeclaredType, err) // no file of its type the service reads
	}
	if err != nil {
		return err
	}
	defer release()
	after := bytes.NewReader(rest)
	if _, err := codec.decode(io.MultiReader(bytes.NewReader(head.buf), after)); err != nil {
		return fmt.Errorf("%w: %w", ErrBytesNotDeclaredType, err)
	}
	if codec.end != nil {
		if err := codec.end(head.buf, len(head.buf)+len(rest), after.Len()); err != nil {
			return fmt.Errorf("%w: %w", ErrBytesNotDeclaredType, err)
		}
	}
	return nil
}

// ImageTooLargeError refuses an image whose header declares more than MaxVerifyPixels. It is
// an ErrBytesNotDeclaredType: no file of its type that the service reads.
type ImageTooLargeError struct{ Width, Height int }

func (e *ImageTooLargeError) Error() string {
	return fmt.Sprintf("%v: %dx%d is over %d pixels", ErrBytesNotDeclaredType, e.Width, e.Height, MaxVerifyPixels)
}

func (e *ImageTooLargeError) Unwrap() error { return ErrBytesNotDeclaredType }

// recorder keeps what the header decoder read, so the full decode starts from the first byte.
type recorder struct {
	r   io.Reader
	buf []byte
}

func (c *recorder) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.buf = append(c.buf, p[:n]...)
	return n, err
}

// verifyingReader is the reader Verifier.Reader returns.
type verifyingReader struct {
	src     io.Reader
	pw      *io.PipeWriter
	verdict chan error
	done    bool
	err     error
}

func (v *verifyingReader) Read(p []byte) (int, error) {
	if v.done {
		return 0, v.err
	}
	n, err := v.src.Read(p)
	if n > 0 {
		if _, werr := v.pw.Write(p[:n]); werr != nil {
			return 0, v.finish(werr)
		}
	}
	if err == io.EOF {
		_ = v.pw.Close()
		if verr := v.finish(nil); verr != nil {
			return n, verr
		}
		return n, io.EOF
	}
	if err != nil {
		v.pw.CloseWithError(err)
		<-v.verdict
		v.done, v.err = true, err
	}
	return n, err
}

// errAbandoned ends the decode of an upload the store stopped reading.
var errAbandoned = errors.New("blobs: upload abandoned before its end")

// Close ends the decode when the reading stopped before the end.
func (v *verifyingReader) Close() error {
	if !v.done {
		v.pw.CloseWithError(errAbandoned)
		_ = v.finish(nil)
	}
	return nil
}

// finish waits for the decoder's verdict and keeps it as the answer of every later Read:
// ErrBytesNotDeclaredType (wrapping why) when the decode failed, io.EOF otherwise.
func (v *verifyingReader) finish(writeErr error) error {
	verr := <-v.verdict
	v.done = true
	switch {
	case verr != nil:
		v.err = verr
	case writeErr != nil:
		v.err = writeErr
	default:
		v.err = io.EOF
		return nil
	}
	return v.err
}
