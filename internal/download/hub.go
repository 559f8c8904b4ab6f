// SPDX-License-Identifier: Apache-2.0

package download

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/fusioninfer/pulumi-fusioninfer/api/modelsource"
)

// DefaultHubEndpoint is the Hugging Face Hub; HF_ENDPOINT replaces it (a mirror, an enterprise Hub).
const DefaultHubEndpoint = "https://huggingface.co"

// Hub reads a repository of the Hugging Face Hub over its HTTP API: the revision's commit
// (/api/models/{repo}/revision/{revision}), its files with their sizes and hashes
// (/api/models/{repo}/tree/{commit}?recursive=true, paged by Link headers), and each file
// (/{repo}/resolve/{commit}/{path}, with Range to resume). Files are fetched by commit, so a
// branch that moves during the download cannot mix two revisions.
type Hub struct {
	Endpoint, Token string
	Source          modelsource.Source
	Client          *http.Client
	commit          string
}

func (h *Hub) get(ctx context.Context, u string, header http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if h.Token != "" {
		req.Header.Set("Authorization", "Bearer "+h.Token) // Go drops it on a redirect to another host (the CDN)
	}
	resp, err := h.Client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		hint := ""
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			hint = " (a gated or private repository: put a token with access in the credentials Secret as HF_TOKEN)"
		}
		return nil, fmt.Errorf("GET %s: %s%s: %s", u, resp.Status, hint, strings.TrimSpace(string(body)))
	}
	return resp, nil
}

func (h *Hub) getJSON(ctx context.Context, u string, into any) (next string, err error) {
	resp, err := h.get(ctx, u, nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		return "", fmt.Errorf("GET %s: %w", u, err)
	}
	return nextLink(resp.Header.Get("Link")), nil
}

// nextLink is the URL of rel="next" in a Link header, "" if none.
func nextLink(header string) string {
	for _, part := range strings.Split(header, ",") {
		target, params, ok := strings.Cut(part, ";")
		if ok && strings.Contains(params, `rel="next"`) {
			return strings.Trim(strings.TrimSpace(target), "<>")
		}
	}
	return ""
}

// hubEntry is an entry of the Hub's tree API.
type hubEntry struct {
	Type string `json:"type"`
	Path string `json:"path"`
	Size int64  `json:"size"`
	OID  string `json:"oid"`
	LFS  *struct {
		OID  string `json:"oid"`
		Size int64  `json:"size"`
	} `json:"lfs"`
}

// List is the revision's commit and its files.
func (h *Hub) List(ctx context.Context) (string, []File, error) {
	repo := h.Endpoint + "/api/models/" + h.Source.Location
	var revision struct {
		SHA string `json:"sha"`
	}
	if _, err := h.getJSON(ctx, repo+"/revision/"+url.PathEscape(h.Source.RevisionOrDefault()), &revision); err != nil {
		return "", nil, err
	}
	if revision.SHA == "" {
		return "", nil, fmt.Errorf("the Hub gave no commit for revision %q", h.Source.RevisionOrDefault())
	}
	h.commit = revision.SHA
	var files []File
	for u := repo + "/tree/" + revision.SHA + "?recursive=true"; u != ""; {
		var page []hubEntry
		next, err := h.getJSON(ctx, u, &page)
		if err != nil {
			return "", nil, err
		}
		for _, e := range page {
			if e.Type != "file" {
				continue
			}
			f := File{Path: e.Path, Size: e.Size, Digest: Digest{Algorithm: "gitsha1", Hex: e.OID}}
			if e.LFS != nil {
				f.Size, f.Digest = e.LFS.Size, Digest{Algorithm: "sha256", Hex: e.LFS.OID}
			}
			files = append(files, f)
		}
		u = next
	}
	return revision.SHA, files, nil
}

// Open reads a file of the listed commit from offset.
func (h *Hub) Open(ctx context.Context, f File, offset int64) (io.ReadCloser, bool, error) {
	segments := strings.Split(f.Path, "/")
	for i := range segments {
		segments[i] = url.PathEscape(segments[i])
	}
	header := http.Header{}
	if offset > 0 {
		header.Set("Range", fmt.Sprintf("bytes=%d-", offset))
	}
	resp, err := h.get(ctx, h.Endpoint+"/"+h.Source.Location+"/resolve/"+h.commit+"/"+strings.Join(segments, "/"), header)
	if err != nil {
		return nil, false, err
	}
	return resp.Body, offset > 0 && resp.StatusCode == http.StatusPartialContent, nil
}
