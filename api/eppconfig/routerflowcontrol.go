// SPDX-License-Identifier: Apache-2.0

package eppconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
)

// RouterFlowControl is llm-d-router v0.10.0's FlowControlConfig (apix/config/v1alpha1/
// endpointpickerconfig_types.go), with the types its strict codec decodes (configloader.go
// decodeRawConfig): an unknown field, or a value of the wrong type, fails the load.
type RouterFlowControl struct {
	MaxBytes                    *resource.Quantity   `json:"maxBytes,omitempty"`
	MaxRequests                 *resource.Quantity   `json:"maxRequests,omitempty"`
	DefaultRequestTTL           *metav1.Duration     `json:"defaultRequestTTL,omitempty"`
	DefaultPriorityBand         *RouterPriorityBand  `json:"defaultPriorityBand,omitempty"`
	DefaultNegativePriorityBand *RouterPriorityBand  `json:"defaultNegativePriorityBand,omitempty"`
	PriorityBands               []RouterPriorityBand `json:"priorityBands,omitempty"`
	UsageLimitPolicyPluginRef   string               `json:"usageLimitPolicyPluginRef,omitempty"`
	SaturationDetector          *RouterPluginRef     `json:"saturationDetector,omitempty"`
	EnableEviction              bool                 `json:"enableEviction,omitempty"`
}

// RouterPriorityBand is a PriorityBandConfig.
type RouterPriorityBand struct {
	Priority          int                `json:"priority"`
	MaxBytes          *resource.Quantity `json:"maxBytes,omitempty"`
	MaxRequests       *resource.Quantity `json:"maxRequests,omitempty"`
	FairnessPolicyRef string             `json:"fairnessPolicyRef,omitempty"`
	OrderingPolicyRef string             `json:"orderingPolicyRef,omitempty"`
}

// UnmarshalJSON decodes flowControl strictly, naming the path of what it refuses.
func (fc *RouterFlowControl) UnmarshalJSON(data []byte) error {
	type FlowControlConfig RouterFlowControl
	return strictSection("flowControl", data, (*FlowControlConfig)(fc), flowControlValues)
}

// UnmarshalJSON decodes dataLayer strictly, naming the path of what it refuses
// (crossReplicaSyncInterval is a metav1.Duration).
func (dl *RouterDataLayer) UnmarshalJSON(data []byte) error {
	type DataLayerConfig RouterDataLayer
	return strictSection("dataLayer", data, (*DataLayerConfig)(dl), valueSpec{fields: map[string]valueSpec{
		"crossReplicaSyncInterval": durationValue,
	}})
}

// valueSpec locates the values that parse their own text (a resource.Quantity, a
// metav1.Duration), whose errors name no field: a leaf (parse), an object (fields) or a list of
// objects (list).
type valueSpec struct {
	parse  func(json.RawMessage) error
	fields map[string]valueSpec
	list   bool
}

var (
	quantityValue = valueSpec{parse: func(raw json.RawMessage) error { return json.Unmarshal(raw, &resource.Quantity{}) }}
	durationValue = valueSpec{parse: func(raw json.RawMessage) error { return json.Unmarshal(raw, &metav1.Duration{}) }}
	bandValues    = map[string]valueSpec{"maxBytes": quantityValue, "maxRequests": quantityValue}
	// flowControlValues are FlowControlConfig's quantities and durations.
	flowControlValues = valueSpec{fields: map[string]valueSpec{
		"maxBytes": quantityValue, "maxRequests": quantityValue, "defaultRequestTTL": durationValue,
		"defaultPriorityBand": {fields: bandValues}, "defaultNegativePriorityBand": {fields: bandValues},
		"priorityBands": {fields: bandValues, list: true},
	}}
)

// strictSection decodes a section as the loader's strict codec does (sigs.k8s.io/json
// UnmarshalStrict: case-sensitive, unknown and duplicate fields refused, reported as "strict
// decoding error: unknown field \"<path>\""), the path starting at the section.
func strictSection(path string, data []byte, into any, values valueSpec) error {
	strictErrs, err := sigsjson.UnmarshalStrict(data, into)
	switch {
	case err != nil && strings.HasPrefix(err.Error(), "json: cannot unmarshal"):
		return fmt.Errorf("%s: %w", path, err) // a type error, naming the field within the section
	case err != nil:
		if located := locateValue(path, data, values); located != nil {
			return located
		}
		return fmt.Errorf("%s: %w", path, err)
	case len(strictErrs) > 0:
		for _, e := range strictErrs {
			var fe sigsjson.FieldError
			if errors.As(e, &fe) {
				fe.SetFieldPath(path + "." + fe.FieldPath())
			}
		}
		return fmt.Errorf("strict decoding error: %w", errors.Join(strictErrs...))
	}
	return nil
}

// locateValue finds the first value under spec that does not parse, with its path.
func locateValue(path string, raw json.RawMessage, spec valueSpec) error {
	if string(raw) == "null" {
		return nil
	}
	switch {
	case spec.parse != nil:
		if err := spec.parse(raw); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	case spec.list:
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return nil
		}
		for i, item := range items {
			if err := locateValue(fmt.Sprintf("%s[%d]", path, i), item, valueSpec{fields: spec.fields}); err != nil {
				return err
			}
		}
	default:
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return nil
		}
		names := make([]string, 0, len(spec.fields))
		for name := range spec.fields {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if value, ok := obj[name]; ok {
				if err := locateValue(path+"."+name, value, spec.fields[name]); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
