// SPDX-License-Identifier: Apache-2.0

package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/types/known/structpb"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/metadata"
)

// The gateway speaks to the Endpoint Picker as Envoy's ext_proc filter does with the processing
// mode the Inference Extension's gateways configure (request and response headers sent, bodies
// FULL_DUPLEX_STREAMED; GIE's test/integration/epp drives the EPP with the same messages): the
// request's headers, then its body; the EPP answers the headers (with the picked endpoint, in the
// x-gateway-destination-endpoint header and in the envoy.lb dynamic metadata: GIE
// docs/proposals/004-endpoint-picker-protocol) once it has read the body, then the body, which it
// may have rewritten. The response goes through it the same way, with the endpoint that served it
// in the envoy.lb metadata (x-gateway-destination-endpoint-served).

// exchange is one request's ext_proc stream.
type exchange struct {
	stream extprocv3.ExternalProcessor_ProcessClient
	cancel context.CancelFunc
}

// peer is the address of the EPP at the other end of the stream.
func (e *exchange) peer() string {
	if p, ok := peer.FromContext(e.stream.Context()); ok && p.Addr != nil {
		return p.Addr.String()
	}
	return ""
}

// pick is what the EPP decided for a request.
type pick struct {
	// endpoints are the endpoints to try, in order: the picked ones, then the fallback.
	endpoints []string
	headers   *extprocv3.HeaderMutation
	body      []byte
	// immediate is the EPP's own answer to the client (503 no endpoint, 429 shed, 400...), when
	// it routes the request nowhere.
	immediate *extprocv3.ImmediateResponse
	latency   time.Duration // from the request's headers sent to the EPP's answer to them
	epp       string        // the EPP that answered, for an immediate response
}

// errProtocol is an answer of the EPP's that breaks the protocol.
var errProtocol = errors.New("endpoint picker protocol")

// requestHeaders are the request's headers as Envoy sends them: its pseudo-headers, then its own.
func requestHeaders(r *http.Request, id string, bodyLength int) *corev3.HeaderMap {
	headers := []*corev3.HeaderValue{
		{Key: ":method", RawValue: []byte(r.Method)},
		{Key: ":path", RawValue: []byte(r.URL.RequestURI())},
		{Key: ":authority", RawValue: []byte(r.Host)},
		{Key: ":scheme", RawValue: []byte("http")},
		{Key: "x-request-id", RawValue: []byte(id)},
		{Key: "content-length", RawValue: []byte(strconv.Itoa(bodyLength))},
	}
	for name, values := range r.Header {
		name = strings.ToLower(name)
		if name == "content-length" || name == "x-request-id" {
			continue
		}
		for _, v := range values {
			headers = append(headers, &corev3.HeaderValue{Key: name, RawValue: []byte(v)})
		}
	}
	return &corev3.HeaderMap{Headers: headers}
}

// requestPhase sends the request to the EPP and reads its decision.
func (e *exchange) requestPhase(r *http.Request, id string, body []byte) (*pick, error) {
	start := time.Now()
	if err := e.stream.Send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{
		RequestHeaders: &extprocv3.HttpHeaders{Headers: requestHeaders(r, id, len(body)), EndOfStream: len(body) == 0},
	}}); err != nil {
		return nil, err
	}
	if len(body) > 0 {
		if err := e.stream.Send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{
			RequestBody: &extprocv3.HttpBody{Body: body, EndOfStream: true},
		}}); err != nil {
			return nil, err
		}
	}
	p := &pick{}
	var rewritten []byte
	gotHeaders, gotBody := false, len(body) == 0
	for !gotHeaders || !gotBody {
		resp, err := e.stream.Recv()
		if err != nil {
			return nil, err
		}
		switch v := resp.Response.(type) {
		case *extprocv3.ProcessingResponse_ImmediateResponse:
			p.immediate, p.latency = v.ImmediateResponse, time.Since(start)
			return p, nil
		case *extprocv3.ProcessingResponse_RequestHeaders:
			if gotHeaders {
				return nil, fmt.Errorf("%w: a second answer to the request headers", errProtocol)
			}
			gotHeaders, p.latency = true, time.Since(start)
			p.headers = v.RequestHeaders.GetResponse().GetHeaderMutation()
			if p.endpoints, err = destinations(p.headers, resp.GetDynamicMetadata()); err != nil {
				return nil, err
			}
		case *extprocv3.ProcessingResponse_RequestBody:
			if !gotHeaders {
				return nil, fmt.Errorf("%w: the body answered before the headers", errProtocol)
			}
			switch m := v.RequestBody.GetResponse().GetBodyMutation().GetMutation().(type) {
			case *extprocv3.BodyMutation_StreamedResponse:
				rewritten = append(rewritten, m.StreamedResponse.Body...)
				gotBody = m.StreamedResponse.EndOfStream
			case *extprocv3.BodyMutation_Body:
				rewritten, gotBody = m.Body, true
			case *extprocv3.BodyMutation_ClearBody:
				rewritten, gotBody = []byte{}, true
			default: // no mutation: the chunk goes as it was sent
				rewritten, gotBody = body, true
			}
		default:
			return nil, fmt.Errorf("%w: %T during the request", errProtocol, resp.Response)
		}
	}
	p.body = rewritten
	if p.body == nil {
		p.body = body
	}
	return p, nil
}

// destinations are the endpoints the EPP picked: the header's list, which the dynamic metadata's
// must equal (the protocol: "The EPP MUST not set two different values"), then the fallback.
func destinations(headers *extprocv3.HeaderMutation, dynamic *structpb.Struct) ([]string, error) {
	var header string
	for _, h := range headers.GetSetHeaders() {
		if strings.EqualFold(h.GetHeader().GetKey(), metadata.DestinationEndpointKey) {
			header = headerValue(h.GetHeader())
		}
	}
	lb := dynamic.GetFields()[metadata.DestinationEndpointNamespace].GetStructValue().GetFields()
	meta := lb[metadata.DestinationEndpointKey].GetStringValue()
	switch {
	case header == "" && meta == "":
		return nil, fmt.Errorf("%w: no %s in the header or the %s metadata", errProtocol, metadata.DestinationEndpointKey, metadata.DestinationEndpointNamespace)
	case header != "" && meta != "" && header != meta:
		return nil, fmt.Errorf("%w: the header says %s, the metadata %s", errProtocol, header, meta)
	case header == "":
		header = meta
	}
	var out []string
	for _, e := range strings.Split(header, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	if fallback := lb[fallbackKey].GetStringValue(); fallback != "" {
		out = append(out, fallback)
	}
	return out, nil
}

// fallbackKey is the v0.3.0 protocol's single fallback endpoint, in the same metadata namespace.
const fallbackKey = "x-gateway-destination-endpoint-fallback"

func headerValue(h *corev3.HeaderValue) string {
	if len(h.GetRawValue()) > 0 {
		return string(h.GetRawValue())
	}
	return h.GetValue()
}

// applyHeaders applies a header mutation to a request's or a response's headers.
func applyHeaders(headers http.Header, m *extprocv3.HeaderMutation) {
	for _, h := range m.GetSetHeaders() {
		key := h.GetHeader().GetKey()
		if strings.HasPrefix(key, ":") || strings.EqualFold(key, "content-length") {
			continue // pseudo-headers and the length are the transport's
		}
		value := headerValue(h.GetHeader())
		switch h.GetAppendAction() {
		case corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD:
			headers.Add(key, value)
		case corev3.HeaderValueOption_ADD_IF_ABSENT:
			if headers.Get(key) == "" {
				headers.Set(key, value)
			}
		default:
			headers.Set(key, value)
		}
	}
	for _, key := range m.GetRemoveHeaders() {
		headers.Del(key)
	}
}

// served is the envoy.lb metadata that tells the EPP which endpoint served the request.
func served(endpoint string) *corev3.Metadata {
	value, _ := structpb.NewStruct(map[string]any{metadata.DestinationEndpointServedKey: endpoint})
	return &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{metadata.DestinationEndpointNamespace: value}}
}

// responseHeaders sends the model server's response headers and returns the EPP's mutation of them.
func (e *exchange) responseHeaders(status int, header http.Header, endpoint string) (*extprocv3.HeaderMutation, error) {
	headers := []*corev3.HeaderValue{{Key: ":status", RawValue: []byte(strconv.Itoa(status))}}
	for name, values := range header {
		for _, v := range values {
			headers = append(headers, &corev3.HeaderValue{Key: strings.ToLower(name), RawValue: []byte(v)})
		}
	}
	if err := e.stream.Send(&extprocv3.ProcessingRequest{
		Request:         &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{Headers: &corev3.HeaderMap{Headers: headers}}},
		MetadataContext: served(endpoint),
	}); err != nil {
		return nil, err
	}
	resp, err := e.stream.Recv()
	if err != nil {
		return nil, err
	}
	v, ok := resp.Response.(*extprocv3.ProcessingResponse_ResponseHeaders)
	if !ok {
		return nil, fmt.Errorf("%w: %T in answer to the response headers", errProtocol, resp.Response)
	}
	return v.ResponseHeaders.GetResponse().GetHeaderMutation(), nil
}

// responseBody streams the model server's response body through the EPP: each chunk read from
// chunks is sent as it comes, and what the EPP answers goes to write (an answer with no mutation
// lets the chunk it answers through as it was); it returns once the EPP has answered the end of
// the body.
func (e *exchange) responseBody(chunks <-chan []byte, readErr func() error, endpoint string, write func([]byte) error) error {
	var mu sync.Mutex
	var unanswered [][]byte // chunks sent and not yet answered, for answers with no mutation
	sent := make(chan error, 1)
	go func() {
		for chunk := range chunks {
			mu.Lock()
			unanswered = append(unanswered, chunk)
			mu.Unlock()
			if err := e.stream.Send(&extprocv3.ProcessingRequest{
				Request:         &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{Body: chunk}},
				MetadataContext: served(endpoint),
			}); err != nil {
				sent <- err
				return
			}
		}
		if err := readErr(); err != nil {
			sent <- fmt.Errorf("the model server's response: %w", err)
			return
		}
		sent <- e.stream.Send(&extprocv3.ProcessingRequest{
			Request:         &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{EndOfStream: true}},
			MetadataContext: served(endpoint),
		})
	}()
	for {
		resp, err := e.stream.Recv()
		if err != nil {
			select {
			case sendErr := <-sent:
				if sendErr != nil {
					return sendErr
				}
			default:
			}
			return err
		}
		v, ok := resp.Response.(*extprocv3.ProcessingResponse_ResponseBody)
		if !ok {
			if _, trailers := resp.Response.(*extprocv3.ProcessingResponse_ResponseTrailers); trailers {
				continue
			}
			return fmt.Errorf("%w: %T in answer to the response body", errProtocol, resp.Response)
		}
		switch m := v.ResponseBody.GetResponse().GetBodyMutation().GetMutation().(type) {
		case *extprocv3.BodyMutation_StreamedResponse:
			if err := write(m.StreamedResponse.Body); err != nil {
				return err
			}
			if m.StreamedResponse.EndOfStream {
				return <-sent
			}
		case *extprocv3.BodyMutation_Body:
			if err := write(m.Body); err != nil {
				return err
			}
		default:
			mu.Lock()
			var chunk []byte
			last := len(unanswered) == 0 // the answer to the end of the body
			if !last {
				chunk, unanswered = unanswered[0], unanswered[1:]
			}
			mu.Unlock()
			if last {
				return <-sent
			}
			if err := write(chunk); err != nil {
				return err
			}
		}
	}
}
