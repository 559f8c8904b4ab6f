// SPDX-License-Identifier: Apache-2.0

// Package download fills a model cache from a model source (cmd/fusioninfer-download, the
// download Job's command): every file of the source into the source's directory of the cache
// (modelsource.Source.CacheDir), each one resumed where an earlier attempt stopped and verified
// against the size and hash the source publishes before it takes its final name, then a
// completion marker. A rerun of a complete download does nothing.
package download

import (
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/fusioninfer/pulumi-fusioninfer/api/modelsource"
)

// CompleteMarker is the file a complete download leaves in the source's directory.
const CompleteMarker = ".fusioninfer-complete"

// partSuffix ends the name of a file being downloaded.
const partSuffix = ".part"

// File is one file of a source.
type File struct {
	// Path is relative to the source's root, with forward slashes.
	Path string
	Size int64
	// Digest is how the file is verified; the zero Digest checks the size only.
	Digest Digest
}

// Digest is a file's published hash.
type Digest struct {
	// Algorithm is sha256 (Hub LFS files), gitsha1 (Hub files in git: SHA-1 of "blob {size}\0"
	// and the content) or md5 (an S3 ETag of a single-part upload).
	Algorithm, Hex string
}

func (d Digest) newHash(size int64) hash.Hash {
	switch d.Algorithm {
	case "sha256":
		return sha256.New()
	case "gitsha1":
		h := sha1.New()
		fmt.Fprintf(h, "blob %d\x00", size)
		return h
	case "md5":
		return md5.New()
	}
	return nil
}

// Store is where a source's files are.
type Store interface {
	// List is the source's files and the revision they are of (a Hub commit; "" for a bucket).
	List(ctx context.Context) (revision string, files []File, err error)
	// Open reads a file from offset on. It reports whether the reader starts at offset (the
	// store honoured the range) or at 0.
	Open(ctx context.Context, f File, offset int64) (body io.ReadCloser, fromOffset bool, err error)
}

// Manifest is what the completion marker records.
type Manifest struct {
	Source   string    `json:"source"`
	Revision string    `json:"revision,omitempty"`
	Exclude  []string  `json:"exclude,omitempty"`
	Files    []File    `json:"files"`
	Finished time.Time `json:"finished"`
}

// Options of a download.
type Options struct {
	// Cache is the cache volume's root; the files go to Cache/{source's CacheDir}.
	Cache string
	// Parallel is how many files are fetched at once.
	Parallel int
	// Exclude are patterns of files not to download (modelsource.Excluded).
	Exclude []string
	Log     *log.Logger
}

// Run downloads a source into the cache.
func Run(ctx context.Context, src modelsource.Source, store Store, opts Options) error {
	dir := filepath.Join(opts.Cache, filepath.FromSlash(src.CacheDir()))
	if m, err := readManifest(dir); err == nil && m.Source == src.String() && slices.Equal(m.Exclude, opts.Exclude) {
		opts.Log.Printf("%s is complete in %s (%d files, revision %q): nothing to do", src, dir, len(m.Files), m.Revision)
		return nil
	}
	revision, listed, err := store.List(ctx)
	if err != nil {
		return fmt.Errorf("listing %s: %w", src, err)
	}
	var files []File
	for _, f := range listed {
		if !modelsource.Excluded(f.Path, opts.Exclude) {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		return fmt.Errorf("%s has no files", src)
	}
	var total int64
	for _, f := range files {
		if !localPath(f.Path) {
			return fmt.Errorf("%s lists %q, which is not a path inside the model's directory", src, f.Path)
		}
		total += f.Size
	}
	opts.Log.Printf("downloading %s (revision %q): %d files (%d excluded), %d bytes, into %s", src, revision, len(files),
		len(listed)-len(files), total, dir)
	group, ctx := errgroup.WithContext(ctx)
	group.SetLimit(max(1, opts.Parallel))
	for _, f := range files {
		group.Go(func() error { return fetch(ctx, store, f, filepath.Join(dir, filepath.FromSlash(f.Path)), opts.Log) })
	}
	if err := group.Wait(); err != nil {
		return err
	}
	data, err := json.MarshalIndent(Manifest{Source: src.String(), Revision: revision, Exclude: opts.Exclude, Files: files,
		Finished: time.Now().UTC()}, "", "  ")
	if err != nil {
		return err
	}
	if err := writeAtomically(filepath.Join(dir, CompleteMarker), data); err != nil {
		return err
	}
	opts.Log.Printf("%s is complete: %d files, %d bytes", src, len(files), total)
	return nil
}

// localPath refuses a listed path that would leave the directory.
func localPath(p string) bool {
	return p != "" && filepath.IsLocal(filepath.FromSlash(p)) && !strings.HasSuffix(p, partSuffix) && p != CompleteMarker
}

func readManifest(dir string) (*Manifest, error) {
	data, err := os.ReadFile(filepath.Join(dir, CompleteMarker))
	if err != nil {
		return nil, err
	}
	var m Manifest
	return &m, json.Unmarshal(data, &m)
}

// fetch downloads one file: skipped when it is already there at its size (a file takes its final
// name only once verified), else appended to its .part from where the part ends, then verified
// as a whole and renamed.
func fetch(ctx context.Context, store Store, f File, final string, logger *log.Logger) error {
	if st, err := os.Stat(final); err == nil && st.Size() == f.Size {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return err
	}
	part := final + partSuffix
	out, err := os.OpenFile(part, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	offset, err := out.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	if offset > f.Size {
		offset = 0
	}
	started := time.Now()
	var body io.ReadCloser
	if offset < f.Size || f.Size == 0 {
		var fromOffset bool
		body, fromOffset, err = store.Open(ctx, f, offset)
		if err != nil {
			return fmt.Errorf("%s: %w", f.Path, err)
		}
		defer body.Close()
		if !fromOffset {
			offset = 0
		}
	}
	if err := out.Truncate(offset); err != nil {
		return err
	}
	if offset > 0 {
		logger.Printf("%s: resuming at byte %d of %d", f.Path, offset, f.Size)
	}
	if _, err := out.Seek(offset, io.SeekStart); err != nil {
		return err
	}
	if body != nil {
		if _, err := io.Copy(out, body); err != nil {
			return fmt.Errorf("%s: interrupted at byte %d of %d (a rerun resumes there): %w", f.Path, position(out), f.Size, err)
		}
	}
	if err := verify(out, f); err != nil {
		_ = os.Remove(part) // a rerun starts it over
		return fmt.Errorf("%s: %w", f.Path, err)
	}
	if err := out.Sync(); err != nil {
		return err
	}
	if err := os.Rename(part, final); err != nil {
		return err
	}
	logger.Printf("%s: %d bytes, verified (%s)", f.Path, f.Size, rate(f.Size-offset, time.Since(started)))
	return nil
}

func position(f *os.File) int64 {
	n, _ := f.Seek(0, io.SeekCurrent)
	return n
}

// verify checks the whole part against the file's size and digest.
func verify(part *os.File, f File) error {
	st, err := part.Stat()
	if err != nil {
		return err
	}
	if st.Size() != f.Size {
		return fmt.Errorf("%d bytes, the source says %d", st.Size(), f.Size)
	}
	h := f.Digest.newHash(f.Size)
	if h == nil {
		return nil
	}
	if _, err := part.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if _, err := io.Copy(h, part); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); !strings.EqualFold(got, f.Digest.Hex) {
		return fmt.Errorf("%s %s, the source says %s: the file is corrupt, and is fetched again on the next attempt", f.Digest.Algorithm, got, f.Digest.Hex)
	}
	return nil
}

func rate(bytes int64, d time.Duration) string {
	if d <= 0 {
		return "instant"
	}
	return strconv.FormatFloat(float64(bytes)/d.Seconds()/(1<<20), 'f', 1, 64) + " MiB/s"
}

func writeAtomically(path string, data []byte) error {
	tmp := path + partSuffix
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
