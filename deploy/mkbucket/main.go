// Command mkbucket creates a bucket on an S3-compatible server for the deployment test
// (deploy/test.sh): mkbucket http://ACCESS:SECRET@host:port BUCKET. It prints the --blobs
// location the processes use and exits non-zero, with the server's reason, when the bucket
// cannot be made.
package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: mkbucket http://ACCESS:SECRET@host:port BUCKET")
		os.Exit(2)
	}
	loc, err := create(os.Args[1], os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkbucket:", err)
		os.Exit(1)
	}
	fmt.Println(loc)
}

// create makes the bucket and answers its s3:// location.
func create(server, bucket string) (string, error) {
	u, err := url.Parse(server)
	if err != nil || u.User == nil {
		return "", fmt.Errorf("%q: want http://ACCESS:SECRET@host:port", server)
	}
	secret, _ := u.User.Password()
	endpoint := u.Scheme + "://" + u.Host
	client := s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(u.User.Username(), secret, ""),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		return "", fmt.Errorf("create bucket %s on %s: %w", bucket, endpoint, err)
	}
	return "s3://" + bucket + "?endpoint=" + url.QueryEscape(endpoint) + "&region=us-east-1&use_path_style=true", nil
}
