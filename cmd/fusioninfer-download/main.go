// Command fusioninfer-download fills a model cache: the command of an InferenceService's
// download Job ("{service}-model-download", docs/model-weights.md). It downloads every file of
// --source into --cache/{the source's directory}, resuming files an earlier attempt left
// unfinished and verifying each against the source's published size and hash, and exits 0 only
// when the directory is complete. Credentials come from the environment: HF_TOKEN (and
// HF_ENDPOINT for a mirror) for the Hub; the AWS SDK's for S3 and GCS (HMAC keys).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/fusioninfer/pulumi-fusioninfer/core/modelsource"
	"github.com/fusioninfer/pulumi-fusioninfer/internal/download"
)

// version is stamped by the build (-X main.version), as the image's tag.
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "fusioninfer-download:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	flags := flag.NewFlagSet("fusioninfer-download", flag.ContinueOnError)
	flags.SetOutput(stderr)
	source := flags.String("source", "", "the model's source: hf://org/name[@revision], s3://bucket/prefix or gs://bucket/prefix")
	cache := flags.String("cache", "", "the cache volume's root; the files go to its directory of the source")
	parallel := flags.Int("parallel", 4, "files fetched at once")
	var exclude patterns
	flags.Var(&exclude, "exclude", "a glob of files not to download, matched against each file's path and folders (repeatable)")
	showVersion := flags.Bool("version", false, "print the version")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if *showVersion {
		fmt.Fprintln(stderr, version)
		return nil
	}
	if *source == "" || *cache == "" {
		return errors.New("give --source and --cache")
	}
	src, err := modelsource.Parse(*source)
	if err != nil {
		return fmt.Errorf("--source %q: %w", *source, err)
	}
	for _, p := range exclude {
		if err := modelsource.ValidPattern(p); err != nil {
			return fmt.Errorf("--exclude %q: %w", p, err)
		}
	}
	var store download.Store
	switch {
	case src.Scheme == modelsource.HuggingFace:
		endpoint := strings.TrimRight(os.Getenv("HF_ENDPOINT"), "/")
		if endpoint == "" {
			endpoint = download.DefaultHubEndpoint
		}
		// a Hub that does not answer fails the attempt (the Job retries and resumes) rather than
		// holding it until the Job's deadline
		transport := http.DefaultTransport.(*http.Transport).Clone()
		transport.ResponseHeaderTimeout = 2 * time.Minute
		store = &download.Hub{Endpoint: endpoint, Token: os.Getenv("HF_TOKEN"), Source: src, Client: &http.Client{Transport: transport}}
	case src.ObjectStorage():
		if store, err = download.NewBucket(ctx, src); err != nil {
			return err
		}
	default:
		return fmt.Errorf("a %s:// source is mounted, not downloaded", src.Scheme)
	}
	logger := log.New(stderr, "", log.LstdFlags|log.LUTC)
	return download.Run(ctx, src, store, download.Options{Cache: *cache, Parallel: *parallel, Exclude: exclude, Log: logger})
}

// patterns is a repeatable string flag.
type patterns []string

func (p *patterns) String() string     { return strings.Join(*p, ",") }
func (p *patterns) Set(v string) error { *p = append(*p, v); return nil }
