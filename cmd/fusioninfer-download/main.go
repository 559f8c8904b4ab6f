// SPDX-License-Identifier: Apache-2.0

// Command fusioninfer-download fills a model cache: the command of an InferenceService's
// download Job ("{service}-model-download", docs/model-weights.md). It downloads every file of
// each --source, one source after the other, into --cache/{the source's directory}, resuming files an earlier attempt left
// unfinished and verifying each against the source's published size and hash, and exits 0 only
// when every source's directory is complete. Credentials come from the environment: HF_TOKEN (and
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

	"github.com/fusioninfer/pulumi-fusioninfer/api/modelsource"
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
	var sources, exclude patterns
	flags.Var(&sources, "source", "a source: hf://org/name[@revision], s3://bucket/prefix or gs://bucket/prefix; repeated, "+
		"the sources are downloaded one after the other (a model's adapters, in one container)")
	cache := flags.String("cache", "", "the cache volume's root; each source's files go to its directory")
	parallel := flags.Int("parallel", 4, "files fetched at once")
	flags.Var(&exclude, "exclude", "a glob of files not to download, matched against each file's path and folders (repeatable)")
	showVersion := flags.Bool("version", false, "print the version")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if *showVersion {
		fmt.Fprintln(stderr, version)
		return nil
	}
	if len(sources) == 0 || *cache == "" {
		return errors.New("give --source and --cache")
	}
	parsed := make([]modelsource.Source, len(sources))
	for i, source := range sources {
		src, err := modelsource.Parse(source)
		if err != nil {
			return fmt.Errorf("--source %q: %w", source, err)
		}
		if !src.Downloaded() {
			return fmt.Errorf("a %s:// source is mounted, not downloaded", src.Scheme)
		}
		parsed[i] = src
	}
	for _, p := range exclude {
		if err := modelsource.ValidPattern(p); err != nil {
			return fmt.Errorf("--exclude %q: %w", p, err)
		}
	}
	logger := log.New(stderr, "", log.LstdFlags|log.LUTC)
	opts := download.Options{Cache: *cache, Parallel: *parallel, Exclude: exclude, Log: logger}
	// one after the other, each to the end: a source that fails does not keep the others from
	// completing, so the Job's retry has only the failed ones left
	var failed []error
	for _, src := range parsed {
		if err := fetchSource(ctx, src, opts); err != nil {
			if len(parsed) == 1 || ctx.Err() != nil {
				return err
			}
			logger.Printf("%s failed: %v", src, err)
			failed = append(failed, fmt.Errorf("%s: %w", src, err))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d sources failed (a rerun resumes them): %w", len(failed), len(parsed), errors.Join(failed...))
	}
	return nil
}

// fetchSource downloads one source into the cache, from its store.
func fetchSource(ctx context.Context, src modelsource.Source, opts download.Options) error {
	var store download.Store
	if src.Scheme == modelsource.HuggingFace {
		endpoint := strings.TrimRight(os.Getenv("HF_ENDPOINT"), "/")
		if endpoint == "" {
			endpoint = download.DefaultHubEndpoint
		}
		// a Hub that does not answer fails the attempt (the Job retries and resumes) rather than
		// holding it until the Job's deadline
		transport := http.DefaultTransport.(*http.Transport).Clone()
		transport.ResponseHeaderTimeout = 2 * time.Minute
		store = &download.Hub{Endpoint: endpoint, Token: os.Getenv("HF_TOKEN"), Source: src, Client: &http.Client{Transport: transport}}
	} else {
		bucket, err := download.NewBucket(ctx, src)
		if err != nil {
			return err
		}
		store = bucket
	}
	return download.Run(ctx, src, store, opts)
}

// patterns is a repeatable string flag.
type patterns []string

func (p *patterns) String() string     { return strings.Join(*p, ",") }
func (p *patterns) Set(v string) error { *p = append(*p, v); return nil }
