// SPDX-License-Identifier: Apache-2.0

package eppconfig

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Plugin types of the two flavors. loader_test.go holds each against the constant of the
// plugin's own package.
const (
	// GIE v1.2.0 (cmd/epp/runner registerInTreePlugins, less the two for conformance tests only).
	PrefixCacheScorer        = "prefix-cache-scorer"
	MaxScorePicker           = "max-score-picker"
	RandomPicker             = "random-picker"
	WeightedRandomPicker     = "weighted-random-picker"
	SingleProfileHandler     = "single-profile-handler"
	KVCacheUtilizationScorer = "kv-cache-utilization-scorer"
	QueueScorer              = "queue-scorer"
	LoRAAffinityScorer       = "lora-affinity-scorer"
	// llm-d inference scheduler v0.4.0 (pkg/plugins RegisterAllPlugins).
	ByLabelFilter              = "by-label"
	ByLabelSelectorFilter      = "by-label-selector"
	DecodeFilter               = "decode-filter"
	PrefillFilter              = "prefill-filter"
	PrefillHeaderHandler       = "prefill-header-handler"
	DataParallelProfileHandler = "data-parallel-profile-handler"
	PDProfileHandler           = "pd-profile-handler"
)

// kind is what a plugin is to a scheduling profile: the loader treats each differently.
type kind int

const (
	filterKind kind = iota
	scorerKind
	pickerKind
	profileHandlerKind
	// other plugins (the prefill header handler runs before each request) take no part in profiles.
	otherKind
)

// pluginSpec is a plugin type as the EPP's loader sees it: its kind, and the check its factory
// makes of its parameters, absent ones included (nil: it reads none).
type pluginSpec struct {
	kind       kind
	parameters func(raw json.RawMessage) error
}

// gie are the reference EPP's plugins; llmd adds llm-d's to them. The factories decode their
// parameters with encoding/json (not strictly: unknown fields pass, a wrong type fails).
var (
	gie = map[string]pluginSpec{
		PrefixCacheScorer:        {scorerKind, decodes[prefixCacheParameters]()},
		MaxScorePicker:           {pickerKind, decodes[pickerParameters]()},
		RandomPicker:             {pickerKind, decodes[pickerParameters]()},
		WeightedRandomPicker:     {pickerKind, decodes[pickerParameters]()},
		SingleProfileHandler:     {profileHandlerKind, nil},
		KVCacheUtilizationScorer: {scorerKind, nil},
		QueueScorer:              {scorerKind, nil},
		LoRAAffinityScorer:       {scorerKind, nil},
	}
	llmd = map[string]pluginSpec{
		ByLabelFilter:              {filterKind, byLabel},
		ByLabelSelectorFilter:      {filterKind, byLabelSelector},
		DecodeFilter:               {filterKind, nil},
		PrefillFilter:              {filterKind, nil},
		PrefillHeaderHandler:       {otherKind, decodes[prefillHeaderParameters]()},
		DataParallelProfileHandler: {profileHandlerKind, dataParallelProfileHandler},
		PDProfileHandler:           {profileHandlerKind, pdProfileHandler},
	}
	// llmdCgoScorers are llm-d v0.4.0's scorers whose package links libzmq and CPython (cgo): the
	// image has them; their parameters are left to the EPP, and a configuration that uses one is
	// checked for plugin names only.
	llmdCgoScorers = []string{
		"precise-prefix-cache-scorer", "load-aware-scorer", "session-affinity-scorer", "active-request-scorer", "no-hit-lru-scorer",
	}
)

// The parameters of the plugins whose factories only decode them.
type (
	prefixCacheParameters struct {
		AutoTune               bool `json:"autoTune"`
		BlockSize              int  `json:"blockSize"`
		MaxPrefixBlocksToMatch int  `json:"maxPrefixBlocksToMatch"`
		LRUCapacityPerServer   int  `json:"lruCapacityPerServer"`
	}
	pickerParameters struct {
		MaxNumOfEndpoints int `json:"maxNumOfEndpoints"`
	}
	prefillHeaderParameters struct {
		PrefillProfile string `json:"prefillProfile"`
	}
)

// decodes is the check of a factory that only decodes its parameters into T.
func decodes[T any]() func(json.RawMessage) error {
	return func(raw json.RawMessage) error {
		var params T
		return decode(raw, &params)
	}
}

// decode reads parameters as the factories do: absent parameters leave the defaults.
func decode(raw json.RawMessage, params any) error {
	if raw == nil {
		return nil
	}
	return json.Unmarshal(raw, params)
}

func byLabel(raw json.RawMessage) error {
	var params struct {
		Label         string   `json:"label"`
		ValidValues   []string `json:"validValues"`
		AllowsNoLabel bool     `json:"allowsNoLabel"`
	}
	if err := decode(raw, &params); err != nil {
		return err
	}
	switch {
	case params.Label == "":
		return fmt.Errorf("'label' must be specified")
	case len(params.ValidValues) == 0 && !params.AllowsNoLabel:
		return fmt.Errorf("either 'validValues' must be non-empty or 'allowsNoLabel' must be true")
	}
	return nil
}

func byLabelSelector(raw json.RawMessage) error {
	var selector metav1.LabelSelector
	if err := decode(raw, &selector); err != nil {
		return err
	}
	_, err := metav1.LabelSelectorAsSelector(&selector)
	return err
}

func dataParallelProfileHandler(raw json.RawMessage) error {
	var params struct {
		PrimaryPort int `json:"primaryPort"`
	}
	if err := decode(raw, &params); err != nil {
		return err
	}
	return checkPort(params.PrimaryPort)
}

func pdProfileHandler(raw json.RawMessage) error {
	params := struct {
		Threshold        int    `json:"threshold"`
		DecodeProfile    string `json:"decodeProfile"`
		PrefillProfile   string `json:"prefillProfile"`
		PrefixPluginName string `json:"prefixPluginName"`
		HashBlockSize    int    `json:"hashBlockSize"`
		PrimaryPort      int    `json:"primaryPort"`
	}{HashBlockSize: 64}
	if err := decode(raw, &params); err != nil {
		return err
	}
	switch {
	case params.Threshold < 0:
		return fmt.Errorf("invalid threshold: must be >= 0, got %d", params.Threshold)
	case params.HashBlockSize <= 0:
		return fmt.Errorf("invalid hashBlockSize: must be > 0, got %d", params.HashBlockSize)
	}
	return checkPort(params.PrimaryPort)
}

func checkPort(port int) error {
	if port != 0 && (port < 1 || port > 65535) {
		return fmt.Errorf("invalid primaryPort: must be between 1 and 65535, got %d", port)
	}
	return nil
}
