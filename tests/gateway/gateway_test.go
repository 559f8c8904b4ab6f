// SPDX-License-Identifier: Apache-2.0

package gateway

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/structpb"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
	inferencev1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/metadata"
)

// The gateway's side of the protocol, against an Endpoint Picker of the test's (a mock: the real
// EPPs run in tests/e2e/routing): what it sends where, and what the failure mode makes of an EPP
// that does not answer.
func TestGatewayFollowsTheEndpointPickerProtocol(t *testing.T) {
	for _, tc := range []struct {
		name        string
		failureMode inferencev1.EndpointPickerFailureMode
		epp         func(upstreams []string) *fakeEPP // nil: the EPP has no ready endpoint
		podReady    bool
		// wantStatus, wantServed (an index of upstreams, -1 for none) and the record's verdict.
		wantStatus int
		wantServed int
		check      func(t *testing.T, rec Record, got *upstreamRequest, response http.Header)
	}{{
		name: "the picked endpoint gets the request as the EPP rewrote it",
		epp: func(u []string) *fakeEPP {
			return &fakeEPP{header: u[1], metadata: u[1], body: `{"model":"rewritten"}`}
		},
		wantStatus: 200, wantServed: 1,
		check: func(t *testing.T, rec Record, got *upstreamRequest, response http.Header) {
			assert.Equal(t, `{"model":"rewritten"}`, got.body, "the body the EPP sent back")
			assert.Equal(t, "rewritten", rec.Model, "the model the server was asked for, recorded")
			assert.Equal(t, "true", response.Get("x-epp-saw-response"), "the EPP's change of the response headers")
			assert.Equal(t, got.server, got.header.Get(metadata.DestinationEndpointKey), "the destination header reaches the server")
			assert.True(t, rec.Completed)
			assert.Positive(t, rec.PickLatency)
			assert.NotEmpty(t, rec.EPP, "the EPP that decided")
		},
	}, {
		name: "a refused connection moves down the EPP's list",
		epp: func(u []string) *fakeEPP {
			list := refused(t) + "," + u[2]
			return &fakeEPP{header: list, metadata: list}
		},
		wantStatus: 200, wantServed: 2,
	}, {
		name: "every endpoint refused: the record names the last one tried",
		epp: func([]string) *fakeEPP {
			first, last := refused(t), refused(t)
			return &fakeEPP{header: first + "," + last, metadata: first + "," + last}
		},
		wantStatus: 503, wantServed: -1,
		check: func(t *testing.T, rec Record, _ *upstreamRequest, _ http.Header) {
			require.Len(t, rec.Picked, 2)
			assert.Equal(t, rec.Picked[1], rec.SentTo, "the connection that failed last")
			assert.Contains(t, rec.Err, rec.SentTo+": ")
		},
	}, {
		name: "the fallback endpoint of the metadata comes last",
		epp: func(u []string) *fakeEPP {
			down := refused(t)
			return &fakeEPP{header: down, metadata: down, fallback: u[2]}
		},
		wantStatus: 200, wantServed: 2,
	}, {
		name:       "a header that contradicts the metadata breaks the protocol: FailClose refuses",
		epp:        func(u []string) *fakeEPP { return &fakeEPP{header: u[1], metadata: u[2]} },
		wantStatus: 500, wantServed: -1,
		check: func(t *testing.T, rec Record, _ *upstreamRequest, _ http.Header) {
			assert.True(t, rec.FailedClosed)
			assert.Contains(t, rec.EPPError, "the header says")
		},
	}, {
		name:        "no EPP and FailClose: refused",
		failureMode: inferencev1.EndpointPickerFailClose, podReady: true,
		wantStatus: 500, wantServed: -1,
		check: func(t *testing.T, rec Record, _ *upstreamRequest, _ http.Header) { assert.True(t, rec.FailedClosed) },
	}, {
		name:        "no EPP and FailOpen: a Ready pod of the pool",
		failureMode: inferencev1.EndpointPickerFailOpen, podReady: true,
		wantStatus: 200, wantServed: 0,
		check: func(t *testing.T, rec Record, _ *upstreamRequest, _ http.Header) {
			assert.True(t, rec.FailedOpen)
			assert.True(t, rec.Completed)
		},
	}, {
		name:        "no EPP and FailOpen, but no Ready pod: nothing to send it to",
		failureMode: inferencev1.EndpointPickerFailOpen,
		wantStatus:  503, wantServed: -1,
	}, {
		name: "the EPP's own answer goes to the client",
		epp: func([]string) *fakeEPP {
			return &fakeEPP{immediate: &extprocv3.ImmediateResponse{Status: &typev3.HttpStatus{Code: typev3.StatusCode_TooManyRequests}, Body: []byte("shed")}}
		},
		wantStatus: 429, wantServed: -1,
		check: func(t *testing.T, rec Record, _ *upstreamRequest, _ http.Header) {
			assert.True(t, rec.Immediate)
			assert.NotEmpty(t, rec.EPP, "the EPP that answered")
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			upstreams, seen := startUpstreams(t, 3)
			var eppAddress string
			if tc.epp != nil {
				eppAddress = startEPP(t, tc.epp(upstreams))
			}
			gw := startGateway(t, upstreams[0], eppAddress, tc.failureMode, tc.podReady)
			resp, err := http.Post(gw.URL+"/v1/completions", "application/json", strings.NewReader(`{"model":"m","prompt":"hi"}`))
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			assert.Equal(t, tc.wantStatus, resp.StatusCode, "%s", body)
			records := gw.Records()
			require.Len(t, records, 1)
			var got *upstreamRequest
			for i, u := range upstreams {
				if r := seen(u); r != nil {
					assert.Equal(t, tc.wantServed, i, "served by upstream %d", i)
					got = r
				}
			}
			if tc.wantServed < 0 {
				assert.Nil(t, got, "no server got the request")
				assert.False(t, records[0].Accepted)
			} else {
				require.NotNil(t, got, "upstream %d got the request", tc.wantServed)
				assert.Equal(t, upstreams[tc.wantServed], records[0].Served)
				assert.Equal(t, records[0].Served, records[0].SentTo, "the endpoint sent to is the one that answered")
				assert.Equal(t, "pod-"+strconv.Itoa(tc.wantServed), records[0].Pod)
				assert.Equal(t, `{"served":"`+upstreams[tc.wantServed]+`"}`, string(body), "the response body passes back")
			}
			if tc.check != nil {
				tc.check(t, records[0], got, resp.Header)
			}
		})
	}
}

// upstreamRequest is what a model server of the test got.
type upstreamRequest struct {
	server string
	header http.Header
	body   string
}

// startUpstreams starts n model servers answering {"served": their address} with x-inference-pod
// pod-{i}; seen says what one of them got.
func startUpstreams(t *testing.T, n int) ([]string, func(string) *upstreamRequest) {
	var mu sync.Mutex
	got := map[string]*upstreamRequest{}
	var out []string
	for i := range n {
		var address string
		server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			mu.Lock()
			got[address] = &upstreamRequest{server: address, header: r.Header.Clone(), body: string(body)}
			mu.Unlock()
			w.Header().Set("x-inference-pod", "pod-"+strconv.Itoa(i))
			_, _ = io.WriteString(w, `{"served":"`+address+`"}`)
		}))
		t.Cleanup(server.Close)
		address = strings.TrimPrefix(server.URL, "http://")
		out = append(out, address)
	}
	return out, func(address string) *upstreamRequest {
		mu.Lock()
		defer mu.Unlock()
		return got[address]
	}
}

// refused is an address nothing listens on.
func refused(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	address := l.Addr().String()
	require.NoError(t, l.Close())
	return address
}

// fakeEPP answers as GIE's EPP does in FULL_DUPLEX_STREAMED mode (pkg/epp/handlers/server.go
// Process): the request headers' answer once the body is read, then the body; the response's
// headers; the response body chunk by chunk.
type fakeEPP struct {
	extprocv3.UnimplementedExternalProcessorServer
	header, metadata, fallback string
	body                       string // the rewritten request body, "" to keep it
	immediate                  *extprocv3.ImmediateResponse
}

func (f *fakeEPP) Process(stream extprocv3.ExternalProcessor_ProcessServer) error {
	for {
		req, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		var resp []*extprocv3.ProcessingResponse
		switch v := req.Request.(type) {
		case *extprocv3.ProcessingRequest_RequestBody:
			if !v.RequestBody.EndOfStream {
				continue
			}
			if f.immediate != nil {
				return stream.Send(&extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ImmediateResponse{ImmediateResponse: f.immediate}})
			}
			lb := map[string]any{metadata.DestinationEndpointKey: f.metadata}
			if f.fallback != "" {
				lb[fallbackKey] = f.fallback
			}
			dynamic, _ := structpb.NewStruct(map[string]any{metadata.DestinationEndpointNamespace: lb})
			body := v.RequestBody.Body
			if f.body != "" {
				body = []byte(f.body)
			}
			resp = append(resp, &extprocv3.ProcessingResponse{
				Response: &extprocv3.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocv3.HeadersResponse{Response: &extprocv3.CommonResponse{
					HeaderMutation: &extprocv3.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{
						{Header: &corev3.HeaderValue{Key: metadata.DestinationEndpointKey, RawValue: []byte(f.header)}}}}}}},
				DynamicMetadata: dynamic,
			}, streamed(&extprocv3.ProcessingResponse_RequestBody{}, body, true))
		case *extprocv3.ProcessingRequest_ResponseHeaders:
			resp = append(resp, &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseHeaders{
				ResponseHeaders: &extprocv3.HeadersResponse{Response: &extprocv3.CommonResponse{HeaderMutation: &extprocv3.HeaderMutation{
					SetHeaders: []*corev3.HeaderValueOption{{Header: &corev3.HeaderValue{Key: "x-epp-saw-response", RawValue: []byte("true")}}}}}}}})
		case *extprocv3.ProcessingRequest_ResponseBody:
			resp = append(resp, streamed(&extprocv3.ProcessingResponse_ResponseBody{}, v.ResponseBody.Body, v.ResponseBody.EndOfStream))
		}
		for _, r := range resp {
			if err := stream.Send(r); err != nil {
				return err
			}
		}
	}
}

// streamed is a request or response body answer that streams body back.
func streamed[T *extprocv3.ProcessingResponse_RequestBody | *extprocv3.ProcessingResponse_ResponseBody](kind T, body []byte, eos bool) *extprocv3.ProcessingResponse {
	answer := &extprocv3.BodyResponse{Response: &extprocv3.CommonResponse{BodyMutation: &extprocv3.BodyMutation{
		Mutation: &extprocv3.BodyMutation_StreamedResponse{StreamedResponse: &extprocv3.StreamedBodyResponse{Body: body, EndOfStream: eos}}}}}
	switch any(kind).(type) {
	case *extprocv3.ProcessingResponse_RequestBody:
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestBody{RequestBody: answer}}
	default:
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseBody{ResponseBody: answer}}
	}
}

// startEPP serves the fake EPP (plaintext) and returns its address.
func startEPP(t *testing.T, epp *fakeEPP) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	server := grpc.NewServer()
	extprocv3.RegisterExternalProcessorServer(server, epp)
	go func() { _ = server.Serve(l) }()
	t.Cleanup(server.Stop)
	return l.Addr().String()
}

// startGateway starts a gateway to the pool "pool" in namespace "ns": its one pod at pod's address
// (Ready or not), its EPP the Service "epp" whose one endpoint is eppAddress ("" for none).
func startGateway(t *testing.T, pod, eppAddress string, failureMode inferencev1.EndpointPickerFailureMode, podReady bool) *Gateway {
	podHost, podPort, _ := net.SplitHostPort(pod)
	port, _ := strconv.Atoi(podPort)
	pool := &inferencev1.InferencePool{
		TypeMeta:   metav1.TypeMeta{APIVersion: inferencev1.GroupVersion.String(), Kind: "InferencePool"},
		ObjectMeta: metav1.ObjectMeta{Name: "pool", Namespace: "ns"},
		Spec: inferencev1.InferencePoolSpec{
			Selector:          inferencev1.LabelSelector{MatchLabels: map[inferencev1.LabelKey]inferencev1.LabelValue{"app": "model"}},
			TargetPorts:       []inferencev1.Port{{Number: inferencev1.PortNumber(port)}},
			EndpointPickerRef: inferencev1.EndpointPickerRef{Kind: "Service", Name: "epp", Port: &inferencev1.Port{Number: 9002}, FailureMode: failureMode},
		},
	}
	object, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pool)
	require.NoError(t, err)
	dynamicClient := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{InferencePools: "InferencePoolList"}, &unstructured.Unstructured{Object: object})
	ready := corev1.ConditionFalse
	if podReady {
		ready = corev1.ConditionTrue
	}
	objects := []runtime.Object{
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-0", Namespace: "ns", Labels: map[string]string{"app": "model"}},
			Status: corev1.PodStatus{PodIP: podHost, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "epp", Namespace: "ns"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "grpc-ext-proc", Port: 9002}}}},
	}
	if eppAddress != "" {
		host, eppPort, _ := net.SplitHostPort(eppAddress)
		n, _ := strconv.Atoi(eppPort)
		objects = append(objects, &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: "epp-x", Namespace: "ns", Labels: map[string]string{discoveryv1.LabelServiceName: "epp"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{host}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("grpc-ext-proc"), Port: ptr.To(int32(n))}},
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gw, err := Start(ctx, fake.NewClientset(objects...), dynamicClient,
		Options{Namespace: "ns", Pool: "pool", PlaintextEPP: true, MessageTimeout: 2 * time.Second})
	require.NoError(t, err)
	t.Cleanup(gw.Close)
	return gw
}

// A proxy beside its picker (EPP set, a standalone router's sidecar) whose picker does not
// answer, failing open, sends a request where the request's own destination header says, as
// Envoy's original-destination cluster does: a client's forged header is an open relay unless the
// proxy removes it first (RemoveHeaders, the bootstrap's early header mutation). Failing closed,
// nothing is sent.
func TestSidecarHonoursOnlyTheDestinationThePickerSets(t *testing.T) {
	var reached sync.Map
	victim := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Store(r.URL.Path, true)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(victim.Close)
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	deadEPP := dead.Addr().String()
	require.NoError(t, dead.Close()) // nothing answers ext_proc there
	for _, tc := range []struct {
		name     string
		failOpen bool
		remove   []string
		want     int
		relayed  bool
	}{
		{"fail open, header kept: relayed to the client's address", true, nil, http.StatusOK, true},
		{"fail open, header removed: nowhere to go", true, []string{metadata.DestinationEndpointKey}, http.StatusServiceUnavailable, false},
		{"fail closed", false, nil, http.StatusInternalServerError, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := Start(context.Background(), nil, nil, Options{EPP: deadEPP, PlaintextEPP: true, FailOpen: tc.failOpen,
				RemoveHeaders: tc.remove, MessageTimeout: time.Second})
			require.NoError(t, err)
			t.Cleanup(g.Close)
			path := "/" + strings.ReplaceAll(tc.name, " ", "-")
			req, err := http.NewRequest(http.MethodPost, g.URL+path, strings.NewReader(`{"model":"m","prompt":"p"}`))
			require.NoError(t, err)
			req.Header.Set(metadata.DestinationEndpointKey, strings.TrimPrefix(victim.URL, "http://"))
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			_ = resp.Body.Close()
			assert.Equal(t, tc.want, resp.StatusCode)
			_, relayed := reached.Load(path)
			assert.Equal(t, tc.relayed, relayed, "the forged destination was reached")
		})
	}
}

// A draining gateway asks every client to close its connection at once and keeps accepting new
// ones until the drain time has passed, then accepts none (Envoy's graceful drain).
func TestDrainClosesConnectionsThenTheListener(t *testing.T) {
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	deadEPP := dead.Addr().String()
	require.NoError(t, dead.Close())
	g, err := Start(context.Background(), nil, nil, Options{EPP: deadEPP, PlaintextEPP: true, MessageTimeout: time.Second})
	require.NoError(t, err)
	t.Cleanup(g.Close)
	ask := func() (*http.Response, error) { // on a connection of its own
		client := &http.Client{Transport: &http.Transport{}}
		defer client.CloseIdleConnections()
		resp, err := client.Post(g.URL+"/v1/completions", "application/json", strings.NewReader(`{"model":"m","prompt":"p"}`))
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
		return resp, err
	}
	before, err := ask()
	require.NoError(t, err)
	assert.False(t, before.Close, "a connection is kept before the drain")
	// A client that keeps a connection from before the drain sends on it after: answered, and
	// told to close it (not closed under it while idle, which would lose the request).
	kept := &http.Client{Transport: &http.Transport{}}
	defer kept.CloseIdleConnections()
	first, err := kept.Post(g.URL+"/v1/completions", "application/json", strings.NewReader(`{"model":"m"}`))
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, first.Body)
	_ = first.Body.Close()
	require.False(t, first.Close)

	const drainTime = 500 * time.Millisecond
	g.Drain(drainTime)
	second, err := kept.Post(g.URL+"/v1/completions", "application/json", strings.NewReader(`{"model":"m"}`))
	require.NoError(t, err, "a kept connection's request after the drain began is answered")
	_, _ = io.Copy(io.Discard, second.Body)
	_ = second.Body.Close()
	assert.True(t, second.Close, "and its client told to close the connection")
	during, err := ask()
	require.NoError(t, err, "new connections are accepted while draining")
	assert.True(t, during.Close, "the client is asked to close its connection (Connection: close)")

	time.Sleep(drainTime + 200*time.Millisecond)
	_, err = ask()
	require.Error(t, err, "no new connection once the drain time has passed")
}
