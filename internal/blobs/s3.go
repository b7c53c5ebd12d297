package blobs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// s3Backend keeps files in one bucket of an S3-compatible service, through the AWS SDK
// directly (no portability layer: its dependencies were most of this program's size).
type s3Backend struct {
	client *s3.Client
	bucket string
}

// openS3 reads s3://bucket?endpoint=…&region=…&use_path_style=true. Credentials come
// from the usual AWS environment and shared files (AWS_ACCESS_KEY_ID, AWS_PROFILE, …).
func openS3(ctx context.Context, location string) (*s3Backend, error) {
	u, err := url.Parse(location)
	if err != nil {
		return nil, err
	}
	if u.Host == "" {
		return nil, errors.New("no bucket name (s3://<bucket>?…)")
	}
	q := u.Query()
	for k := range q {
		switch k {
		case "endpoint", "region", "use_path_style", "s3ForcePathStyle":
		default:
			return nil, fmt.Errorf("unknown option %q (known: endpoint, region, use_path_style)", k)
		}
	}
	var opts []func(*config.LoadOptions) error
	if r := q.Get("region"); r != "" {
		opts = append(opts, config.WithRegion(r))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, err
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1" // S3-compatible servers rarely care; the SDK insists on one
	}
	pathStyle := false
	for _, k := range []string{"use_path_style", "s3ForcePathStyle"} {
		if v := q.Get(k); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, fmt.Errorf("%s=%q is not true or false", k, v)
			}
			pathStyle = b
		}
	}
	endpoint := q.Get("endpoint")
	if endpoint != "" {
		if e, err := url.Parse(endpoint); err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" {
			return nil, fmt.Errorf("endpoint %q is not an absolute http(s) URL", endpoint)
		}
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.UsePathStyle = pathStyle
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
		// Checksums only when the operation requires one: S3-compatible servers differ
		// in which of the newer checksum headers they accept.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	return &s3Backend{client: client, bucket: u.Host}, nil
}

// spoolMemory is how much of a body put keeps in memory before spooling to a temporary
// file: the SDK signs the payload over plain HTTP, which needs a body it can rewind.
const spoolMemory = 8 << 20

// spool returns a rewindable copy of r and its size; release removes any temporary file.
func spool(ctx context.Context, r io.Reader) (body io.ReadSeeker, size int64, release func(), err error) {
	head, err := io.ReadAll(io.LimitReader(ctxReader{ctx: ctx, r: r}, spoolMemory+1))
	if err != nil {
		return nil, 0, nil, err
	}
	if len(head) <= spoolMemory {
		return bytes.NewReader(head), int64(len(head)), func() {}, nil
	}
	f, err := os.CreateTemp("", "modelexec-s3-*")
	if err != nil {
		return nil, 0, nil, err
	}
	release = func() { f.Close(); os.Remove(f.Name()) }
	n, err := io.Copy(f, io.MultiReader(bytes.NewReader(head), ctxReader{ctx: ctx, r: r}))
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		release()
		return nil, 0, nil, err
	}
	return f, n, release, nil
}

func (b *s3Backend) put(ctx context.Context, key, contentType string, r io.Reader, exclusive bool) (Info, error) {
	body, size, release, err := spool(ctx, r)
	if err != nil {
		return Info{}, err
	}
	defer release()
	in := &s3.PutObjectInput{
		Bucket: aws.String(b.bucket), Key: aws.String(key), Body: body,
		ContentLength: aws.Int64(size), ContentType: aws.String(contentType),
	}
	if exclusive {
		// Conditional write: S3 refuses it (412) when the key exists, so of two racing
		// Creates exactly one lands.
		in.IfNoneMatch = aws.String("*")
	}
	if _, err := b.client.PutObject(ctx, in); err != nil {
		if exclusive && (status(err) == 412 || status(err) == 409) {
			return Info{}, ErrExists
		}
		return Info{}, err
	}
	return Info{ContentType: contentType, Size: size, ModTime: time.Now().UTC()}, nil
}

func (b *s3Backend) open(ctx context.Context, key string) (io.ReadCloser, Info, error) {
	out, err := b.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(key)})
	if err != nil {
		return nil, Info{}, s3NotFound(err)
	}
	info := Info{ContentType: aws.ToString(out.ContentType), Size: aws.ToInt64(out.ContentLength)}
	if out.LastModified != nil {
		info.ModTime = out.LastModified.UTC()
	}
	return out.Body, info, nil
}

func (b *s3Backend) stat(ctx context.Context, key string) (Info, error) {
	out, err := b.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(key)})
	if err != nil {
		return Info{}, s3NotFound(err)
	}
	info := Info{ContentType: aws.ToString(out.ContentType), Size: aws.ToInt64(out.ContentLength)}
	if out.LastModified != nil {
		info.ModTime = out.LastModified.UTC()
	}
	return info, nil
}

// delete answers ErrNotFound for a missing key as the port says; S3's own DELETE
// succeeds either way, so the key is looked at first. Some S3-compatible servers answer a
// DELETE of a missing key 404 instead: a key another process deleted between the look and the
// DELETE is ErrNotFound too.
func (b *s3Backend) delete(ctx context.Context, key string) error {
	if _, err := b.stat(ctx, key); err != nil {
		return err
	}
	_, err := b.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(key)})
	if err != nil {
		return s3NotFound(err)
	}
	return nil
}

func (b *s3Backend) close() error { return nil }

func (b *s3Backend) presignGet(ctx context.Context, key string) (string, error) {
	req, err := s3.NewPresignClient(b.client).PresignGetObject(ctx,
		&s3.GetObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(key)}, s3.WithPresignExpires(LinkTTL))
	if err != nil {
		return "", err
	}
	return req.URL, nil
}

// presignPut binds the content type: Content-Type becomes a signed header.
func (b *s3Backend) presignPut(ctx context.Context, key, contentType string) (string, error) {
	req, err := s3.NewPresignClient(b.client).PresignPutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(b.bucket), Key: aws.String(key), ContentType: aws.String(contentType),
	}, s3.WithPresignExpires(LinkTTL))
	if err != nil {
		return "", err
	}
	return req.URL, nil
}

func status(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func s3NotFound(err error) error {
	if status(err) == 404 || strings.Contains(err.Error(), "NoSuchKey") {
		return ErrNotFound
	}
	return err
}
