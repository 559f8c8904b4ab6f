// SPDX-License-Identifier: Apache-2.0

// Command fusioninfer-lora-loader keeps a vLLM server's LoRA adapters those of a list: the
// sidecar of every server pod of a model with adapters (docs/lora.md,
// docs/design/0027-lora-adapters.md). It reads the list from the model's adapters ConfigMap,
// mounted as a file, every --interval, and reconciles each server in its pod with it (one --server
// a server: each local rank of a data parallel pod is one, and the pool routes to every rank)
// through vLLM's runtime LoRA API (VLLM_ALLOW_RUNTIME_LORA_UPDATING): loads what is missing or
// whose path changed, unloads what the list no longer has; an adapter whose directory has no
// adapter_config.json is not sent to the servers, and named. An adapter is loaded when every
// server has it. GET /ready answers 200 once the list has been read and every adapter of it tried
// against every server, all answering (the container's
// readiness probe, so a new pod takes traffic only after its adapters loaded), else 503 with the
// cause; an adapter that failed is named in its answer but holds nothing back: the pod's base
// model and its other adapters serve (docs/design/0027-lora-adapters.md). GET /adapters is its state as JSON (vllm.LoaderState), which
// `fusioninfer status` reads through the API server's pod proxy.
//
// GIE's lora-syncer (tools/dynamic-lora-sidecar/sidecar/sidecar.py, LoraReconciler.reconcile)
// does the like from ensureExist/ensureNotExist lists; this one unloads what leaves the list and
// reports readiness.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
)

// version is stamped by the build (-X main.version), as the image's tag.
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "fusioninfer-lora-loader:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	opts, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if opts.version {
		fmt.Fprintln(stderr, version)
		return nil
	}
	if opts.probe {
		return probeReady(ctx, opts.listen, stderr)
	}
	if opts.list == "" {
		return errors.New("give --adapters")
	}
	l := &loader{list: opts.list, root: opts.root, servers: opts.servers, client: &http.Client{Timeout: 5 * time.Minute},
		log: log.New(stderr, "", log.LstdFlags|log.LUTC)}
	httpServer := &http.Server{Addr: opts.listen, Handler: l, ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- httpServer.ListenAndServe() }()
	defer httpServer.Close()
	ticker := time.NewTicker(opts.interval)
	defer ticker.Stop()
	for {
		l.reconcile(ctx)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-serveErr:
			return err
		case <-ticker.C:
		}
	}
}

// options are the loader's command line.
type options struct {
	list, listen, root string
	servers            []string
	interval           time.Duration
	probe, version     bool
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var opts options
	flags := flag.NewFlagSet("fusioninfer-lora-loader", flag.ContinueOnError)
	flags.SetOutput(stderr)
	flags.StringVar(&opts.list, "adapters", "", "the adapter list: JSON {\"adapters\": [{\"name\", \"path\"}]}, the ConfigMap's file")
	flags.Func(goFlag(vllm.FlagLoaderServer), "a vLLM server's base URL, "+defaultServer+" unless given; repeated for each server of the pod "+
		"(each local rank of a data parallel pod)", func(url string) error {
		opts.servers = append(opts.servers, strings.TrimRight(url, "/"))
		return nil
	})
	flags.StringVar(&opts.listen, goFlag(vllm.FlagLoaderListen), ":"+strconv.Itoa(vllm.LoRALoaderPort), "the address of /ready and /adapters")
	flags.StringVar(&opts.root, "root", "/", "the directory the list's paths are in (the pod's file system, where the adapters' volumes are "+
		"mounted at the server's paths; another for a loader run outside its pod)")
	flags.DurationVar(&opts.interval, "interval", 5*time.Second, "how often the list is read and the server reconciled")
	flags.BoolVar(&opts.probe, "probe", false, "ask the running loader at --listen whether it is ready: print why not and exit 1 "+
		"(the container's readiness probe, whose output the kubelet's event carries)")
	flags.BoolVar(&opts.version, "version", false, "print the version")
	if err := flags.Parse(args); err != nil {
		return opts, err
	}
	if len(opts.servers) == 0 {
		opts.servers = []string{defaultServer}
	}
	return opts, nil
}

// goFlag is the name the flag package defines a flag by: the render's spelling without its dashes
// (the package reads -name and --name alike).
func goFlag(f vllm.Flag) string { return strings.TrimLeft(f.Name, "-") }

// defaultServer is vLLM's own address in its pod, on its default port.
const defaultServer = "http://localhost:8000"

// probeReady asks the loader listening at addr for /ready; not ready is an error that says why.
func probeReady(ctx context.Context, addr string, out io.Writer) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %q: %w", addr, err)
	}
	if host == "" {
		host = "localhost"
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, port)+vllm.PathLoaderReady, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 8192))
	if resp.StatusCode != http.StatusOK {
		return errors.New(strings.TrimSpace(string(body)))
	}
	fmt.Fprint(out, string(body))
	return nil
}

// loader reconciles one server with one list.
type loader struct {
	list    string
	servers []string
	// root is the directory the list's paths are in: "/" in the loader's pod, where the adapters'
	// volumes are mounted as the server's are.
	root   string
	client *http.Client
	log    *log.Logger

	mu sync.Mutex
	// problem is why the list is not all loaded ("" when it is); blocking, the part of it that
	// keeps the pod not ready (the list unreadable, the server not answering); reconciled: at
	// least once.
	problem, blocking string
	reconciled        bool
	state             []vllm.AdapterState
}

// reconcile loads and unloads until the server's adapters are the list's, and records the outcome.
func (l *loader) reconcile(ctx context.Context) {
	state, blocking, failed := l.sync(ctx)
	problem := strings.Join(failed, "\n")
	if blocking != "" {
		problem = blocking // no adapter was tried
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if problem != l.problem || !l.reconciled {
		if problem == "" {
			l.log.Printf("all %d adapters loaded", len(state))
		} else {
			l.log.Print(problem)
		}
	}
	l.state, l.problem, l.blocking, l.reconciled = state, problem, blocking, true
}

// sync is one pass over the list and every server: each adapter's state, what kept the pass from
// trying them (blocking), and a line for each adapter that failed. An adapter is loaded when every
// server has it; a server that does not answer holds the list back (the answering ones are
// reconciled all the same).
func (l *loader) sync(ctx context.Context) (state []vllm.AdapterState, blocking string, failed []string) {
	data, err := os.ReadFile(l.list)
	if err != nil {
		return nil, fmt.Sprintf("reading the adapter list: %v", err), nil
	}
	var want vllm.AdapterList
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&want); err != nil {
		return nil, fmt.Sprintf("the adapter list %s: %v", l.list, err), nil
	}
	// the files are the pod's, the same for every server: checked once; an adapter loaded from
	// them stays loaded, named only when a server still needs it (unsent)
	filesErr := make([]error, len(want.Adapters))
	for i, a := range want.Adapters {
		filesErr[i] = l.checkFiles(a.Path)
	}
	unsent := make([]bool, len(want.Adapters))
	serverErrs := make([][]string, len(want.Adapters)) // per adapter, each server's failure
	var silent []string
	for _, server := range l.servers {
		errs, unloadFailed, err := l.syncServer(ctx, server, want.Adapters, filesErr, unsent)
		if err != nil {
			silent = append(silent, l.named(server)+"is not answering yet: "+err.Error())
			continue
		}
		for i, e := range errs {
			if e != "" {
				serverErrs[i] = append(serverErrs[i], l.on(server)+e)
			}
		}
		failed = append(failed, unloadFailed...)
	}
	if len(silent) > 0 {
		return nil, "the model server " + strings.Join(silent, "; "), nil
	}
	for i, a := range want.Adapters {
		s := vllm.AdapterState{Name: a.Name, Path: a.Path}
		switch {
		case unsent[i]:
			s.Error = filesErr[i].Error()
		case len(serverErrs[i]) > 0:
			s.Error = strings.Join(serverErrs[i], "; ")
		default:
			s.Loaded = true
		}
		if !s.Loaded {
			failed = append(failed, fmt.Sprintf("adapter %s (%s) failed to load: %s", a.Name, a.Path, s.Error))
		}
		state = append(state, s)
	}
	return state, "", failed
}

// named is how a message names a server: "" when the loader has one, else its URL and a space.
func (l *loader) named(server string) string {
	if len(l.servers) == 1 {
		return ""
	}
	return server + " "
}

// on begins a server's failure: "" when the loader has one server, else "on {its URL}: ".
func (l *loader) on(server string) string {
	if len(l.servers) == 1 {
		return ""
	}
	return "on " + server + ": "
}

// syncServer loads and unloads on one server until its adapters are the list's: per adapter of
// the list, why it failed on this server ("" when it is loaded, or when its files are missing,
// filesErr: then it is not sent, and unsent says so); a line for each adapter no longer listed
// that failed to unload; an error when the server does not answer.
func (l *loader) syncServer(ctx context.Context, server string, want []vllm.Adapter, filesErr []error, unsent []bool) (errs, unloadFailed []string, err error) {
	loaded, err := l.loadedAdapters(ctx, server)
	if err != nil {
		return nil, nil, err
	}
	errs = make([]string, len(want))
	wanted := map[string]bool{}
	for i, a := range want {
		wanted[a.Name] = true
		path, isLoaded := loaded[a.Name]
		if isLoaded && path == a.Path {
			continue
		}
		if filesErr[i] != nil {
			// not sent to the server, which would refuse it the same way with a less plain cause;
			// a previous version stays loaded
			unsent[i] = true
			continue
		}
		if isLoaded && path != "" {
			// replaced: vLLM refuses to load a name it has, so the old one goes first
			if err := l.post(ctx, server, vllm.PathUnloadLoRAAdapter, map[string]string{"lora_name": a.Name}); err != nil {
				errs[i] = fmt.Sprintf("unloading its previous version (%s): %v", path, err)
				continue
			}
		}
		if err := l.post(ctx, server, vllm.PathLoadLoRAAdapter, map[string]string{"lora_name": a.Name, "lora_path": a.Path}); err != nil {
			errs[i] = err.Error()
		} else {
			l.log.Printf("loaded adapter %s from %s%s", a.Name, a.Path, l.into(server))
		}
	}
	for name := range loaded {
		if wanted[name] {
			continue
		}
		if err := l.post(ctx, server, vllm.PathUnloadLoRAAdapter, map[string]string{"lora_name": name}); err != nil {
			unloadFailed = append(unloadFailed, fmt.Sprintf("adapter %s, no longer listed, failed to unload: %s%v", name, l.on(server), err))
		} else {
			l.log.Printf("unloaded adapter %s%s", name, l.into(server))
		}
	}
	return errs, unloadFailed, nil
}

// into ends a log line of a load or unload: "" when the loader has one server, else which.
func (l *loader) into(server string) string {
	if len(l.servers) == 1 {
		return ""
	}
	return " on " + server
}

// checkFiles says why the adapter at path cannot load when its directory lacks the file vLLM reads
// first (vllm/lora/peft_helper.py, PEFTHelper.from_local_dir reads adapter_config.json;
// vllm/lora/worker_manager.py, WorkerLoRAManager._load_adapter refuses the adapter without it).
func (l *loader) checkFiles(path string) error {
	_, err := os.Stat(filepath.Join(l.root, path, vllm.AdapterConfigFile))
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("no %s in %s: the adapter's files are not there: its download has not completed, "+
			"or its source holds no LoRA adapter", vllm.AdapterConfigFile, path)
	}
	return fmt.Errorf("reading %s: %v", filepath.Join(path, vllm.AdapterConfigFile), errors.Unwrap(err))
}

// loadedAdapters are the server's adapters and their paths: the cards of /v1/models with a
// parent (vllm/entrypoints/openai/serving_models.py, show_available_models: an adapter's card has
// the base model as parent and its path as root).
func (l *loader) loadedAdapters(ctx context.Context, server string) (map[string]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, server+vllm.PathModels, nil)
	if err != nil {
		return nil, err
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", vllm.PathModels, resp.Status)
	}
	var models struct {
		Data []struct {
			ID     string  `json:"id"`
			Root   string  `json:"root"`
			Parent *string `json:"parent"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&models); err != nil {
		return nil, fmt.Errorf("%s: %w", vllm.PathModels, err)
	}
	out := map[string]string{}
	for _, m := range models.Data {
		if m.Parent != nil && *m.Parent != "" {
			out[m.ID] = m.Root
		}
	}
	return out, nil
}

// post sends a JSON body to the server; an answer other than 2xx is an error with vLLM's message.
func (l *loader) post(ctx context.Context, server, path string, body map[string]string) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, server+path, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := l.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}

// notReconciled is the loader's state before its first reconcile.
const notReconciled = "not reconciled yet"

// ServeHTTP answers /ready and /adapters.
func (l *loader) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch r.URL.Path {
	case vllm.PathLoaderReady:
		switch {
		case !l.reconciled:
			http.Error(w, notReconciled, http.StatusServiceUnavailable)
		case l.blocking != "":
			http.Error(w, l.blocking, http.StatusServiceUnavailable)
		case l.problem != "":
			fmt.Fprintln(w, "ok, but:\n"+l.problem)
		default:
			fmt.Fprintln(w, "ok")
		}
	case vllm.PathLoaderState:
		w.Header().Set("Content-Type", "application/json")
		state := vllm.LoaderState{Adapters: l.state, Problem: l.problem}
		if !l.reconciled {
			state.Problem = notReconciled
		}
		if state.Adapters == nil {
			state.Adapters = []vllm.AdapterState{}
		}
		_ = json.NewEncoder(w).Encode(state)
	default:
		http.NotFound(w, r)
	}
}
