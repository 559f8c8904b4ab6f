// SPDX-License-Identifier: Apache-2.0

package eppconfig

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"
	configapi "sigs.k8s.io/gateway-api-inference-extension/apix/config/v1alpha1"
)

// featureGates are the gates the EPP's runner registers (cmd/epp/runner: datalayer's and
// flowcontrol's); the loader refuses any other.
var featureGates = sets.New("dataLayer", "flowControl")

func checkFeatureGates(gates configapi.FeatureGates) error {
	for _, gate := range gates {
		if !featureGates.Has(gate) {
			return fmt.Errorf("failed to validate feature gates - %s is an unregistered Feature Gate", gate)
		}
	}
	return nil
}

// pluginsOf are the plugins a flavor's EPP instantiates, and the names of those it has that are
// checked by name only (llm-d's cgo scorers).
func pluginsOf(flavor Flavor) (map[string]pluginSpec, []string) {
	switch flavor {
	case FlavorGIE:
		return gie, nil
	case FlavorLLMD:
		all := map[string]pluginSpec{}
		for _, set := range []map[string]pluginSpec{gie, llmd} {
			for name, spec := range set {
				all[name] = spec
			}
		}
		return all, llmdCgoScorers
	}
	return nil, nil
}

// Check applies to a configuration what the EPP of the flavor does at start-up
// (pkg/epp/config/loader of GIE v1.2.0: LoadConfigPhaseOne, then LoadConfigPhaseTwo with the
// flavor's plugin factories): every plugin type must exist in that flavor and take its
// parameters, and every scheduling profile, with the loader's defaults, must be complete. The
// error says which plugin or profile is wrong, in the loader's words where it has them.
func Check(cfg *configapi.EndpointPickerConfig, flavor Flavor) error {
	specs, namesOnly := pluginsOf(flavor)
	if specs == nil {
		return fmt.Errorf("unknown EPP flavor %q", flavor)
	}
	known := sets.KeySet(specs).Insert(namesOnly...)
	var unknown []string
	for _, p := range cfg.Plugins {
		if !known.Has(p.Type) {
			unknown = append(unknown, fmt.Sprintf("%s (%s)", p.Type, p.Name))
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("plugin types not in %s (%s): %s; it has: %s", flavor, flavor.DefaultImage(), strings.Join(unknown, ", "), strings.Join(sets.List(known), ", "))
	}
	for _, p := range cfg.Plugins {
		if _, instantiable := specs[p.Type]; !instantiable {
			return nil // a cgo scorer: its parameters, and so the profiles, are left to the EPP
		}
	}
	// The ConfigMap's text is what the EPP reads.
	text, err := Marshal(cfg)
	if err != nil {
		return err
	}
	if _, err := Parse(text); err != nil {
		return err
	}
	instances, err := instantiate(cfg.Plugins, specs)
	if err != nil {
		return fmt.Errorf("failed to instantiate plugins - %w", err)
	}
	return checkProfiles(cfg.SchedulingProfiles, instances)
}

// instance is a plugin the loader instantiated.
type instance struct {
	kind       kind
	pluginType string
}

// instantiate checks each plugin as the loader's instantiatePlugins does, and returns the
// plugins by name (a plugin's name defaults to its type).
func instantiate(declared []configapi.PluginSpec, specs map[string]pluginSpec) (map[string]instance, error) {
	byName := map[string]instance{}
	for _, p := range declared {
		name := p.Name
		if name == "" {
			name = p.Type
		}
		if p.Type == "" {
			return nil, fmt.Errorf("plugin definition for '%s' is missing a type", name)
		}
		if _, taken := byName[name]; taken {
			return nil, fmt.Errorf("plugin name '%s' used more than once", name)
		}
		spec := specs[p.Type]
		if spec.parameters != nil {
			if err := spec.parameters(p.Parameters); err != nil {
				return nil, fmt.Errorf("failed to instantiate the plugin type '%s' - %w", p.Type, err)
			}
		}
		byName[name] = instance{spec.kind, p.Type}
	}
	return byName, nil
}

// checkProfiles applies the loader's phase-two defaults and rules to the scheduling profiles
// (setDefaultsPhaseTwo, validateSchedulingProfiles, loadSchedulerConfig).
func checkProfiles(declared []configapi.SchedulingProfile, byName map[string]instance) error {
	profiles := declared
	if len(profiles) == 0 {
		// The loader makes one profile of every filter, scorer and picker, in map order: a
		// scorer that lands after the picker gets no weight, and the EPP crashes on it.
		var pickers, scorers []string
		for name, p := range byName {
			switch p.kind {
			case pickerKind:
				pickers = append(pickers, name)
			case scorerKind:
				scorers = append(scorers, name)
			}
		}
		sort.Strings(pickers)
		if len(pickers) > 1 {
			return fmt.Errorf("failed to load scheduler config - the default profile holds every picker: %s; declare scheduling profiles with one picker each", strings.Join(pickers, ", "))
		}
		if len(pickers) == 1 && len(scorers) > 0 {
			return fmt.Errorf("without scheduling profiles the EPP orders picker %s and the scorers at random and crashes when a scorer comes after the picker; declare a scheduling profile", pickers[0])
		}
		profiles = []configapi.SchedulingProfile{{Name: "default"}}
	}
	handlers, hasPicker := 0, false
	singleHandler := false
	for _, p := range byName {
		switch p.kind {
		case profileHandlerKind:
			handlers++
			singleHandler = singleHandler || p.pluginType == SingleProfileHandler
		case pickerKind:
			hasPicker = true
		}
	}
	if len(profiles) == 1 && handlers == 0 {
		byName[SingleProfileHandler], handlers, singleHandler = instance{profileHandlerKind, SingleProfileHandler}, 1, true
	}
	if !hasPicker {
		byName[MaxScorePicker] = instance{pickerKind, MaxScorePicker}
	}
	names := sets.New[string]()
	for _, profile := range profiles {
		if profile.Name == "" {
			return errors.New("failed to validate scheduling profiles - SchedulingProfile must have a name")
		}
		if names.Has(profile.Name) {
			return fmt.Errorf("failed to validate scheduling profiles - the name '%s' has been specified for more than one SchedulingProfile", profile.Name)
		}
		names.Insert(profile.Name)
		if err := checkProfile(profile, byName); err != nil {
			return err
		}
	}
	switch {
	case handlers > 1:
		return errors.New("only one profile handler is allowed")
	case handlers == 0:
		return errors.New("no profile handler was specified")
	case singleHandler && len(profiles) > 1:
		return errors.New("single profile handler is intended to be used with a single profile, but multiple profiles were specified")
	}
	return nil
}

// checkProfile: every reference names a plugin; scorers before the profile's first picker get
// the default weight, scorers after it must have one; one picker at most (the default picker
// is added to a profile without one).
func checkProfile(profile configapi.SchedulingProfile, byName map[string]instance) error {
	pickers, pastPicker := 0, false
	for _, plugin := range profile.Plugins {
		if plugin.PluginRef == "" {
			return fmt.Errorf("failed to validate scheduling profiles - SchedulingProfile '%s' plugins must have a plugin reference", profile.Name)
		}
		p, defined := byName[plugin.PluginRef]
		if !defined {
			return fmt.Errorf("failed to validate scheduling profiles - %s is a reference to an undefined Plugin", plugin.PluginRef)
		}
		switch {
		case p.kind == scorerKind && plugin.Weight == nil && pastPicker:
			return fmt.Errorf("scheduling profile '%s': scorer %s comes after the picker and has no weight, on which the EPP crashes; give it a weight", profile.Name, plugin.PluginRef)
		case p.kind == pickerKind:
			pickers++
			pastPicker = true
		}
	}
	if pickers > 1 {
		return fmt.Errorf("failed to load scheduler config - scheduling profile '%s' has %d pickers; a profile has one", profile.Name, pickers)
	}
	return nil
}
