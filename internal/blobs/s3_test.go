package blobs_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/modelexec/modelexec/internal/blobs"
)

// s3Location makes a fresh bucket on the S3-compatible server named by MODELEXEC_TEST_S3
// (http://ACCESS:SECRET@host:port) and returns the location that opens it. Without the
// variable the test is skipped, except under CI=true where it fails: CI starts a server.
func s3Location(t *testing.T) string {
	t.Helper()
	raw := os.Getenv("MODELEXEC_TEST_S3")
	if raw == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("MODELEXEC_TEST_S3 is not set under CI=true: .ci/run starts an S3-compatible server")
		}
		t.Skip("MODELEXEC_TEST_S3 not set (http://ACCESS:SECRET@host:port of an S3-compatible server); skipping")
	}
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		t.Fatalf("MODELEXEC_TEST_S3 %q: want http://ACCESS:SECRET@host:port", raw)
	}
	access := u.User.Username()
	secret, _ := u.User.Password()
	endpoint := u.Scheme + "://" + u.Host
	t.Setenv("AWS_ACCESS_KEY_ID", access)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))

	var b [6]byte
	_, _ = rand.Read(b[:])
	bucket := "modelexec-test-" + hex.EncodeToString(b[:])
	client := s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(access, secret, ""),
	})
	ctx := context.Background()
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("create bucket on %s: %v", endpoint, err)
	}
	t.Cleanup(func() {
		out, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
		if err == nil {
			for _, o := range out.Contents {
				_, _ = client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: o.Key})
			}
		}
		_, _ = client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)})
	})
	return "s3://" + bucket + "?endpoint=" + url.QueryEscape(endpoint) + "&region=us-east-1&use_path_style=true"
}

// TestS3Store runs the store checks against a real S3-compatible server.
func TestS3Store(t *testing.T) {
	loc := s3Location(t)
	b, err := blobs.OpenBucket(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	storeSuite(t, b)
}

// TestS3PresignedLinks: a presigned PUT stores bytes under the bound content type, a PUT
// with another content type is refused by the server, and the presigned GET reads them.
func TestS3PresignedLinks(t *testing.T) {
	loc := s3Location(t)
	ctx := context.Background()
	b, err := blobs.OpenBucket(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	signer := blobs.BucketSigner{Bucket: b}
	key := "uploads/acc_1/p.png"
	put, _, err := signer.SignPut(ctx, key, "image/png", 100)
	if err != nil {
		t.Fatal(err)
	}
	send := func(ct string) int {
		req, _ := http.NewRequest(http.MethodPut, put, strings.NewReader("\x89PNG\r\n\x1a\nbytes"))
		req.Header.Set("Content-Type", ct)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := send("text/html"); st != http.StatusForbidden {
		t.Errorf("PUT with another content type: %d, want 403", st)
	}
	if st := send("image/png"); st != http.StatusOK {
		t.Fatalf("PUT: %d", st)
	}
	get, _, err := signer.SignGet(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(get)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/png" || !strings.HasSuffix(string(body), "bytes") {
		t.Fatalf("GET: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
}
