// SPDX-License-Identifier: Apache-2.0

// Package gateway is a test gateway for one InferencePool, as a Gateway API implementation that
// supports InferencePool backends routes to it (GIE's implementer's guide): for each HTTP request
// it asks the pool's Endpoint Picker over Envoy's ext_proc protocol (extproc.go) which model server
// to send it to, sends it there, and passes the response back through the EPP. It tracks the pool's
// Ready pods and the EPP's endpoints itself (pool.go), and follows the pool's failure mode when the
// EPP does not answer: FailClose refuses the request, FailOpen sends it to a Ready pod of the pool
// of its own choosing (GIE api/v1 inferencepool_types.go, EndpointPickerFailureMode). It records
// each request: what the EPP picked, which endpoint and which pod served it, how long the pick took.
package gateway

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/metadata"
)

// Options configure a gateway.
type Options struct {
	// Namespace and Pool name the InferencePool the gateway routes to.
	Namespace, Pool string
	// MessageTimeout bounds each wait for the EPP's answer while the request is decided (Envoy's
	// ext_proc message_timeout); 10 s if zero.
	MessageTimeout time.Duration
	// PlaintextEPP speaks to the EPP without TLS. GIE's Endpoint Pickers serve TLS with a
	// certificate of their own unless --secure-serving=false, and the Inference Extension's
	// gateway configurations connect with TLS and do not verify it (its inferencepool chart's
	// templates/istio.yaml: tls mode SIMPLE, insecureSkipVerify).
	PlaintextEPP bool
	// EPP, when set, is the one Endpoint Picker's address (host:port) and the gateway tracks no
	// InferencePool: a proxy beside the picker in its pod, as a standalone router's Envoy sidecar
	// is configured by its bootstrap (cmd/envoy-standin). The clients may then be nil.
	EPP string
	// FailOpen is the failure mode when EPP is set (Envoy's ext_proc failure_mode_allow); with
	// no pool the gateway has no endpoint of its own to choose: a request the EPP did not answer
	// goes where its own destination header says, as the sidecar's original-destination cluster
	// reads the header from the request as it is (Envoy's docs, ORIGINAL_DST use_http_header:
	// "the host is taken from the header"), and is a 503 without one.
	FailOpen bool
	// RemoveHeaders are removed from each request before the EPP sees it (Envoy's early header
	// mutation, as a standalone router's bootstrap removes the headers that name an address).
	RemoveHeaders []string
	// Listen is the address to serve on; 127.0.0.1:0 if empty.
	Listen string
	// Recorded, if set, is called with each request's record as it ends (a program that runs the
	// gateway reports them in its log).
	Recorded func(Record)
}

// Record is what happened to one request.
type Record struct {
	ID         string
	Start, End time.Time
	Status     int
	// Picked are the endpoints the EPP picked, in order; Served is the one that answered, Pod the
	// model server's own name for itself (llm-d-inference-sim's x-inference-pod header).
	Picked      []string
	Served, Pod string
	// SentTo is the endpoint the request was last sent to: Served when one answered, else the
	// one whose connection failed (Err says how).
	SentTo string
	// Model is the model the request named as it reached the model server: its body's "model"
	// after the EPP's rewrite (an InferenceModelRewrite's target). The EPP puts the name the
	// client asked for back into the response (GIE v1.5.0 pkg/epp/handlers/server.go
	// rewriteModelName), so the client never sees it.
	Model       string
	PickLatency time.Duration
	// RoutedAt is when the gateway had the request's endpoint: the EPP's pick came back or,
	// failing open, it chose one itself. A request that arrived before an endpoint was Ready can
	// still be routed to it after.
	RoutedAt time.Time
	// EPP is the address of the Endpoint Picker that decided, ip:port.
	EPP string
	// EPPError is how the EPP failed the request; FailedOpen and FailedClosed what the pool's
	// failure mode then made of it.
	EPPError                 string
	FailedOpen, FailedClosed bool
	// Immediate: the EPP answered the client itself (no ready endpoint, request shed, ...).
	Immediate bool
	// Accepted: the request was sent to a model server; Completed: its response reached the
	// client whole. An accepted request that did not complete is lost; Err says why.
	Accepted, Completed bool
	Err                 string
}

// Lost says whether a model server accepted the request and the client did not get its response.
func (r Record) Lost() bool { return r.Accepted && !r.Completed }

// Gateway serves HTTP on loopback and routes to its pool.
type Gateway struct {
	// URL is where it listens, http://127.0.0.1:{port}.
	URL string

	opts     Options
	tracker  *tracker
	resolver *manual.Resolver
	conn     *grpc.ClientConn
	upstream *http.Client
	server   *http.Server
	listener net.Listener
	draining atomic.Bool
	cancel   context.CancelFunc
	// fixedEPP: where ext_proc goes with a fixed EPP (Options.EPP, then SendExtProcTo).
	fixedEPP atomic.Pointer[[]string]

	mu      sync.Mutex
	records []Record
}

// Start starts a gateway for the pool and waits until it knows the pool (ctx bounds the wait);
// it runs until Close.
func Start(ctx context.Context, clients kubernetes.Interface, dynamicClient dynamic.Interface, opts Options) (*Gateway, error) {
	if opts.MessageTimeout == 0 {
		opts.MessageTimeout = 10 * time.Second
	}
	running, cancel := context.WithCancel(context.Background())
	g := &Gateway{opts: opts, cancel: cancel, resolver: manual.NewBuilderWithScheme("epp")}
	g.resolver.InitialState(resolver.State{})
	creds := credentials.NewTLS(&tls.Config{InsecureSkipVerify: true}) //nolint:gosec // as the Inference Extension's gateways connect to its EPP
	if opts.PlaintextEPP {
		creds = insecure.NewCredentials()
	}
	conn, err := grpc.NewClient(g.resolver.Scheme()+":///"+opts.Pool, grpc.WithResolvers(g.resolver), grpc.WithTransportCredentials(creds),
		grpc.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`))
	if err != nil {
		cancel()
		return nil, err
	}
	conn.Connect()
	g.conn = conn
	if opts.EPP != "" {
		g.SendExtProcTo(opts.EPP)
	}
	// One connection a request: a connection refused is then the endpoint's, never a stale pooled one.
	g.upstream = &http.Client{Transport: &http.Transport{DisableKeepAlives: true, DialContext: (&net.Dialer{Timeout: 2 * time.Second}).DialContext}}

	if opts.EPP != "" {
		return g, g.serve()
	}
	namespaced := informers.NewSharedInformerFactoryWithOptions(clients, 0, informers.WithNamespace(opts.Namespace))
	pools := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dynamicClient, 0, opts.Namespace, func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", opts.Pool).String()
	}).ForResource(InferencePools).Informer()
	g.tracker = &tracker{namespace: opts.Namespace, name: opts.Pool, pools: pools.GetStore(),
		pods: namespaced.Core().V1().Pods().Informer().GetStore(), services: namespaced.Core().V1().Services().Informer().GetStore(),
		slices: namespaced.Discovery().V1().EndpointSlices().Informer().GetStore(), onChange: g.eppChanged}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { g.tracker.refresh() }, UpdateFunc: func(any, any) { g.tracker.refresh() }, DeleteFunc: func(any) { g.tracker.refresh() },
	}
	for _, informer := range []cache.SharedIndexInformer{pools, namespaced.Core().V1().Pods().Informer(),
		namespaced.Core().V1().Services().Informer(), namespaced.Discovery().V1().EndpointSlices().Informer()} {
		if _, err := informer.AddEventHandler(handler); err != nil {
			g.Close()
			return nil, err
		}
		go informer.Run(running.Done())
		if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
			g.Close()
			return nil, fmt.Errorf("the gateway's informers did not sync: %w", ctx.Err())
		}
	}
	g.tracker.refresh()
	if g.tracker.current().pool == nil {
		g.Close()
		return nil, fmt.Errorf("no InferencePool %s/%s", opts.Namespace, opts.Pool)
	}
	if err := g.serve(); err != nil {
		return nil, err
	}
	return g, nil
}

// serve starts serving on opts.Listen.
func (g *Gateway) serve() error {
	address := g.opts.Listen
	if address == "" {
		address = "127.0.0.1:0"
	}
	listener, err := net.Listen("tcp", address)
	if err != nil {
		g.Close()
		return err
	}
	g.URL = "http://" + listener.Addr().String()
	g.server = &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second}
	g.listener = listener
	go func() { _ = g.server.Serve(listener) }()
	return nil
}

// state is what the gateway knows of its pool; with a fixed EPP, that EPP and no pod of its own.
func (g *Gateway) state() poolState {
	if g.opts.EPP != "" {
		return poolState{epp: *g.fixedEPP.Load(), fixedFailOpen: g.opts.FailOpen}
	}
	return g.tracker.current()
}

// SendExtProcTo sends the requests that arrive from now on to these EPPs (a gateway of a fixed
// EPP, Options.EPP): a proxy whose ext_proc cluster fails over from its own picker to others
// (cmd/envoy-standin). Streams already open end where they are.
func (g *Gateway) SendExtProcTo(addresses ...string) {
	g.fixedEPP.Store(&addresses)
	g.eppChanged(poolState{epp: addresses})
}

// eppChanged gives the ext_proc client the EPP's endpoints.
func (g *Gateway) eppChanged(state poolState) {
	addresses := make([]resolver.Address, 0, len(state.epp))
	for _, e := range state.epp {
		addresses = append(addresses, resolver.Address{Addr: e})
	}
	if g.conn != nil {
		g.resolver.UpdateState(resolver.State{Addresses: addresses})
	}
}

// State is what the gateway knows of its pool: the Ready pods' endpoints, the EPP's endpoints,
// the failure mode.
func (g *Gateway) State() (endpoints, epp []string, failureMode string) {
	s := g.state()
	return s.endpoints, s.epp, s.failureMode()
}

// Records are the requests served so far.
func (g *Gateway) Records() []Record {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]Record(nil), g.records...)
}

// Close stops the gateway.
func (g *Gateway) Close() {
	if g.server != nil {
		_ = g.server.Close()
	}
	if g.conn != nil {
		_ = g.conn.Close()
	}
	g.cancel()
}

// ServeHTTP routes one request.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.askToCloseWhileDraining(w.Header())
	rec := &Record{ID: r.Header.Get("x-request-id"), Start: time.Now()}
	if rec.ID == "" {
		rec.ID = uuid.NewString() // as Envoy generates one
	}
	defer func() {
		rec.End = time.Now()
		g.mu.Lock()
		g.records = append(g.records, *rec)
		g.mu.Unlock()
		if g.opts.Recorded != nil {
			g.opts.Recorded(*rec)
		}
	}()
	for _, name := range g.opts.RemoveHeaders {
		r.Header.Del(name)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		rec.Status, rec.Err = http.StatusBadRequest, err.Error()
		http.Error(w, err.Error(), rec.Status)
		return
	}
	state := g.state()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	headers := r.Header.Clone()
	ex, p, err := g.decide(ctx, r, rec.ID, body)
	if ex != nil {
		rec.EPP = ex.peer()
	}
	if p != nil && p.epp != "" {
		rec.EPP = p.epp
	}
	var endpoints []string
	switch {
	case err != nil && !state.failOpen():
		rec.EPPError, rec.FailedClosed = err.Error(), true
		rec.Status = http.StatusInternalServerError // ext_proc.proto status_on_error: "The default status is HTTP 500"
		http.Error(w, "ext_proc_error: "+err.Error(), rec.Status)
		return
	case err != nil && g.opts.EPP != "":
		rec.EPPError, rec.FailedOpen = err.Error(), true
		if endpoints = r.Header.Values(metadata.DestinationEndpointKey); len(endpoints) == 0 {
			rec.Status = http.StatusServiceUnavailable
			http.Error(w, "no healthy upstream", rec.Status)
			return
		}
	case err != nil:
		rec.EPPError, rec.FailedOpen = err.Error(), true
		if len(state.endpoints) == 0 {
			rec.Status = http.StatusServiceUnavailable
			http.Error(w, "no healthy upstream", rec.Status)
			return
		}
		endpoints = []string{state.endpoints[rand.IntN(len(state.endpoints))]}
	case p.immediate != nil:
		rec.Immediate, rec.PickLatency = true, p.latency
		rec.Status = int(p.immediate.GetStatus().GetCode())
		if rec.Status == 0 {
			rec.Status = http.StatusOK
		}
		applyHeaders(w.Header(), p.immediate.GetHeaders())
		w.WriteHeader(rec.Status)
		_, _ = w.Write(p.immediate.GetBody())
		rec.Completed = true
		return
	default:
		rec.Picked, rec.PickLatency = p.endpoints, p.latency
		endpoints, body = p.endpoints, p.body
		applyHeaders(headers, p.headers)
	}
	rec.RoutedAt = time.Now()
	if ex != nil {
		defer ex.cancel()
	}
	resp, endpoint, err := g.send(ctx, r, headers, body, endpoints)
	rec.SentTo = endpoint
	if err != nil {
		rec.Status, rec.Err = http.StatusServiceUnavailable, err.Error()
		http.Error(w, "upstream connect error: "+err.Error(), rec.Status)
		return
	}
	defer resp.Body.Close()
	rec.Accepted, rec.Served, rec.Pod = true, endpoint, resp.Header.Get("x-inference-pod")
	var sent struct {
		Model string `json:"model"`
	}
	if json.Unmarshal(body, &sent) == nil {
		rec.Model = sent.Model
	}
	if err := g.respond(w, resp, ex, endpoint); err != nil {
		rec.Err = err.Error()
		panic(http.ErrAbortHandler) // the client sees the connection reset, as from Envoy
	}
	rec.Status, rec.Completed = resp.StatusCode, true
}

// decide asks the EPP for the request's endpoint; each wait for an answer is bounded by
// MessageTimeout. An error is the EPP's failure, which the failure mode decides.
func (g *Gateway) decide(ctx context.Context, r *http.Request, id string, body []byte) (*exchange, *pick, error) {
	streamCtx, cancel := context.WithCancel(ctx)
	timer := time.AfterFunc(g.opts.MessageTimeout, cancel)
	stream, err := extprocv3.NewExternalProcessorClient(g.conn).Process(streamCtx)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	ex := &exchange{stream: stream, cancel: cancel}
	p, err := ex.requestPhase(r, id, body)
	if !timer.Stop() && err != nil {
		err = fmt.Errorf("no answer within %s: %w", g.opts.MessageTimeout, err)
	}
	if err != nil || p.immediate != nil {
		cancel()
		if err != nil {
			return nil, nil, err
		}
		p.epp = ex.peer()
		return nil, p, nil
	}
	return ex, p, nil
}

// send sends the request to the first endpoint that takes the connection (a refused or failed
// connection moves on to the next one, as Envoy's retry on connect-failure does down the EPP's list).
// The endpoint returned is the last one tried, the one that answered when err is nil.
func (g *Gateway) send(ctx context.Context, r *http.Request, headers http.Header, body []byte, endpoints []string) (*http.Response, string, error) {
	var tried string
	var errs []error
	for _, endpoint := range endpoints {
		tried = endpoint
		req, err := http.NewRequestWithContext(ctx, r.Method, "http://"+endpoint+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			return nil, tried, err
		}
		req.Header = headers.Clone()
		req.ContentLength = int64(len(body))
		resp, err := g.upstream.Do(req)
		if err == nil {
			return resp, endpoint, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", endpoint, err))
		var opErr *net.OpError
		if !errors.As(err, &opErr) || opErr.Op != "dial" {
			break // the request may have reached it: not retried
		}
	}
	return nil, tried, errors.Join(errs...)
}

// respond passes the model server's response to the client, through the EPP when it decided.
func (g *Gateway) respond(w http.ResponseWriter, resp *http.Response, ex *exchange, endpoint string) error {
	header := resp.Header.Clone()
	if ex != nil {
		mutation, err := ex.responseHeaders(resp.StatusCode, resp.Header, endpoint)
		if err != nil {
			return fmt.Errorf("the EPP on the response headers: %w", err)
		}
		applyHeaders(header, mutation)
	}
	header.Del("Content-Length") // the EPP may rewrite the body
	for k, v := range header {
		w.Header()[k] = v
	}
	g.askToCloseWhileDraining(w.Header())
	w.WriteHeader(resp.StatusCode)
	flusher, _ := w.(http.Flusher)
	write := func(b []byte) error {
		if _, err := w.Write(b); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	}
	chunks := make(chan []byte, 16)
	var readErr error
	go func() {
		defer close(chunks)
		buf := make([]byte, 32*1024)
		for {
			n, err := resp.Body.Read(buf)
			if n > 0 {
				chunks <- append([]byte(nil), buf[:n]...)
			}
			if err != nil {
				if err != io.EOF {
					readErr = err
				}
				return
			}
		}
	}()
	if ex == nil {
		for chunk := range chunks {
			if err := write(chunk); err != nil {
				return err
			}
		}
		return readErr
	}
	if err := ex.responseBody(chunks, func() error { return readErr }, endpoint, write); err != nil {
		return fmt.Errorf("the EPP on the response body: %w", err)
	}
	return nil
}
