// SPDX-License-Identifier: Apache-2.0

package download

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fusioninfer/pulumi-fusioninfer/api/modelsource"
)

// GCSEndpoint is Google Cloud Storage's S3-compatible XML API, which takes HMAC keys as S3
// access keys: gs:// sources are read through it.
const GCSEndpoint = "https://storage.googleapis.com"

// Bucket reads the objects under a prefix of an S3 bucket, of an S3-compatible store
// (AWS_ENDPOINT_URL) or of a GCS bucket, with the AWS SDK's S3 client and its default
// credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY from the credentials Secret, or the
// pod's identity).
type Bucket struct {
	Source modelsource.Source
	Client *s3.Client
}

// NewBucket makes the S3 client of a bucket source from the environment.
func NewBucket(ctx context.Context, src modelsource.Source) (*Bucket, error) {
	var opts []func(*config.LoadOptions) error
	if src.Scheme == modelsource.GCS && os.Getenv("AWS_REGION") == "" {
		opts = append(opts, config.WithRegion("auto"))
	}
	if os.Getenv("AWS_REGION") == "" && os.Getenv("AWS_DEFAULT_REGION") == "" && src.Scheme == modelsource.S3 {
		opts = append(opts, config.WithRegion("us-east-1")) // the SDK finds a bucket's region from a redirect
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, err
	}
	// Checksums the SDK would add or demand by default are not supported by GCS and some
	// S3-compatible stores; the download verifies what the store publishes instead.
	cfg.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
	cfg.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if o.BaseEndpoint == nil && src.Scheme == modelsource.GCS {
			o.BaseEndpoint = aws.String(GCSEndpoint)
		}
		o.UsePathStyle = o.BaseEndpoint != nil // an endpoint of one's own: MinIO, Ceph, GCS
	})
	return &Bucket{Source: src, Client: client}, nil
}

// singlePartETag is the ETag of an object uploaded in one part: its MD5.
var singlePartETag = regexp.MustCompile(`^[0-9a-fA-F]{32}$`)

// List is the objects under the prefix; the revision of a bucket is "".
func (b *Bucket) List(ctx context.Context) (string, []File, error) {
	prefix := ""
	if b.Source.Path != "" {
		prefix = b.Source.Path + "/"
	}
	pages := s3.NewListObjectsV2Paginator(b.Client, &s3.ListObjectsV2Input{Bucket: aws.String(b.Source.Location), Prefix: aws.String(prefix)})
	var files []File
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return "", nil, err
		}
		for _, o := range page.Contents {
			key := aws.ToString(o.Key)
			if strings.HasSuffix(key, "/") {
				continue // a folder marker
			}
			f := File{Path: strings.TrimPrefix(key, prefix), Size: aws.ToInt64(o.Size)}
			if etag := strings.Trim(aws.ToString(o.ETag), `"`); singlePartETag.MatchString(etag) {
				f.Digest = Digest{Algorithm: "md5", Hex: etag}
			}
			files = append(files, f)
		}
	}
	return "", files, nil
}

// Open reads an object from offset.
func (b *Bucket) Open(ctx context.Context, f File, offset int64) (io.ReadCloser, bool, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(b.Source.Location), Key: aws.String(joinKey(b.Source.Path, f.Path))}
	if offset > 0 {
		in.Range = aws.String(fmt.Sprintf("bytes=%d-", offset))
	}
	out, err := b.Client.GetObject(ctx, in)
	if err != nil {
		return nil, false, err
	}
	if out.Body == nil {
		return nil, false, errors.New("an empty response")
	}
	return out.Body, offset > 0 && out.ContentRange != nil, nil
}

func joinKey(prefix, p string) string {
	if prefix == "" {
		return p
	}
	return prefix + "/" + p
}
