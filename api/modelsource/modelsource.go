// SPDX-License-Identifier: Apache-2.0

// Package modelsource reads a model's source URI (spec.model.source): where the weights are, the
// directory of the cache they are downloaded to, and the model's public name. Validation, the core
// and the downloader (cmd/fusioninfer-download) all read sources through it; it imports nothing of
// ours, so the downloader's image stays small.
package modelsource

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
)

// Scheme is where weights come from.
type Scheme string

const (
	// HuggingFace is the Hugging Face Hub: hf://org/name[@revision] (or hf://name for a repository
	// without an organisation).
	HuggingFace Scheme = "hf"
	// S3 is Amazon S3 or an S3-compatible store: s3://bucket/prefix.
	S3 Scheme = "s3"
	// GCS is Google Cloud Storage through its S3-compatible XML API: gs://bucket/prefix.
	GCS Scheme = "gs"
	// PVC is a volume that already holds the weights: pvc://claim/path.
	PVC Scheme = "pvc"
	// OCI is an image whose files are the weights, mounted as a Kubernetes image volume: oci://reference.
	OCI Scheme = "oci"
)

// Schemes are the schemes a source may have, in the order the docs list them.
var Schemes = []Scheme{HuggingFace, S3, GCS, PVC, OCI}

// DefaultRevision is the Hub revision of a source that names none: a branch, so it moves.
const DefaultRevision = "main"

// Source is a parsed model source.
type Source struct {
	Scheme Scheme
	// Location is the Hub repository (org/name), the bucket, the claim, or the image reference.
	Location string
	// Path is the object prefix in a bucket or the directory on a claim, without slashes at its
	// ends; empty for the whole bucket or claim.
	Path string
	// Revision is the Hub revision (a branch, tag or commit) given after @, empty if none.
	Revision string
}

var (
	hubRepo    = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9._-]*/)?[A-Za-z0-9][A-Za-z0-9._-]*$`)
	hubRev     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]*$`)
	dnsLabel   = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
	bucketName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{1,221}[a-z0-9]$`)
)

// Parse reads a source URI. Its errors say what is allowed, not the URI, which the caller names
// (a field.Invalid shows the value; a flag its name and value).
func Parse(uri string) (Source, error) {
	scheme, rest, ok := strings.Cut(uri, "://")
	if !ok {
		return Source{}, errors.New("no scheme: write hf://org/name[@revision], s3://bucket/prefix, gs://bucket/prefix, pvc://claim/path or oci://image")
	}
	switch Scheme(scheme) {
	case HuggingFace:
		repo, revision, hasRevision := strings.Cut(rest, "@")
		if !hubRepo.MatchString(repo) || strings.Contains(repo, "..") {
			return Source{}, errors.New("a Hub source is hf://org/name[@revision]")
		}
		if hasRevision && (!hubRev.MatchString(revision) || strings.Contains(revision, "..")) {
			return Source{}, errors.New("the revision after @ must be a branch, tag or commit")
		}
		return Source{Scheme: HuggingFace, Location: repo, Revision: revision}, nil
	case S3, GCS:
		bucket, prefix, _ := strings.Cut(rest, "/")
		if !bucketName.MatchString(bucket) {
			return Source{}, fmt.Errorf("%q is not a bucket name", bucket)
		}
		return Source{Scheme: Scheme(scheme), Location: bucket, Path: cleanPath(prefix)}, validPath(prefix)
	case PVC:
		claim, dir, _ := strings.Cut(rest, "/")
		if !dnsLabel.MatchString(claim) {
			return Source{}, fmt.Errorf("%q is not a claim name", claim)
		}
		return Source{Scheme: PVC, Location: claim, Path: cleanPath(dir)}, validPath(dir)
	case OCI:
		if rest == "" || strings.ContainsAny(rest, " \t") {
			return Source{}, errors.New("an image source is oci://registry/repository:tag (or @sha256:digest)")
		}
		return Source{Scheme: OCI, Location: rest}, nil
	}
	return Source{}, fmt.Errorf("unknown scheme %q: use one of %s", scheme, strings.Join(schemeNames(), ", "))
}

func schemeNames() []string {
	out := make([]string, len(Schemes))
	for i, s := range Schemes {
		out[i] = string(s)
	}
	return out
}

func cleanPath(p string) string { return strings.Trim(p, "/") }

// validPath refuses a path that climbs out of its bucket or claim.
func validPath(p string) error {
	for _, part := range strings.Split(p, "/") {
		if part == ".." || part == "." {
			return fmt.Errorf("the path may not contain %q", part)
		}
	}
	return nil
}

// Downloaded reports whether the weights are copied into a cache by the download Job (Hub and
// object storage); a claim and an image are mounted as they are.
func (s Source) Downloaded() bool {
	return s.Scheme == HuggingFace || s.ObjectStorage()
}

// ObjectStorage reports whether the source is a bucket (S3 or GCS): what vLLM's Run:ai streamer reads.
func (s Source) ObjectStorage() bool { return s.Scheme == S3 || s.Scheme == GCS }

// RevisionOrDefault is the Hub revision to download: the one given, else main.
func (s Source) RevisionOrDefault() string {
	if s.Revision == "" {
		return DefaultRevision
	}
	return s.Revision
}

// CacheDir is the directory, relative to the cache volume's root, that holds the source's files:
// {scheme}/{repository or bucket}/{path}, and the revision for the Hub. A changed revision or
// prefix is a new directory, so servers of the old and of the new revision never read each
// other's files while a rollout replaces them.
func (s Source) CacheDir() string {
	switch s.Scheme {
	case HuggingFace:
		return path.Join(string(s.Scheme), s.Location, s.RevisionOrDefault())
	case S3, GCS:
		return path.Join(string(s.Scheme), s.Location, s.Path)
	}
	return ""
}

// PublicName is the name clients ask for by default (vLLM's --served-model-name): the Hub
// repository, else the last element of the path, else the bucket, claim or image repository.
func (s Source) PublicName() string {
	switch {
	case s.Scheme == HuggingFace:
		return s.Location
	case s.Path != "":
		return path.Base(s.Path)
	case s.Scheme == OCI:
		return imageRepository(s.Location)
	}
	return s.Location
}

// imageRepository is an image reference's last path element without tag or digest.
func imageRepository(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	name := path.Base(ref)
	name, _, _ = strings.Cut(name, ":")
	return name
}

// String is the source as a URI.
func (s Source) String() string {
	out := string(s.Scheme) + "://" + s.Location
	if s.Path != "" {
		out += "/" + s.Path
	}
	if s.Revision != "" {
		out += "@" + s.Revision
	}
	return out
}

// ValidPattern checks a pattern of files not to download: a glob of Go's path.Match.
func ValidPattern(pattern string) error {
	if pattern == "" {
		return fmt.Errorf("an empty pattern")
	}
	_, err := path.Match(pattern, "")
	return err
}

// Excluded reports whether a file (its path in the source, with slashes) matches one of the
// patterns, itself or through one of its folders: "original" excludes original/consolidated.00.pth.
func Excluded(file string, patterns []string) bool {
	for _, pattern := range patterns {
		for p := file; p != "." && p != "/" && p != ""; p = path.Dir(p) {
			if ok, _ := path.Match(pattern, p); ok {
				return true
			}
			if ok, _ := path.Match(pattern, path.Base(p)); ok && !strings.Contains(pattern, "/") {
				return true
			}
		}
	}
	return false
}
