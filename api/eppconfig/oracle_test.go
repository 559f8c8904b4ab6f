// SPDX-License-Identifier: Apache-2.0

package eppconfig

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/epploader"
)

// oracle is a release's Endpoint Picker start-up code as a program (epploader.Oracle), for the
// whole test binary.
type oracle struct{ program *epploader.Oracle }

type oracleRequest = epploader.Request

// startOracle starts the oracle of a release, building it unless in short mode (minutes cold:
// make test's short mode uses it once make check, or CI, has built it, and skips until then).
func startOracle(t *testing.T, release string) *oracle {
	t.Helper()
	program, err := epploader.StartOracle(release, !testing.Short())
	if errors.Is(err, epploader.ErrNotBuilt) {
		t.Skipf("the %s oracle: %v", release, err)
	}
	require.NoError(t, err)
	return &oracle{program}
}

// ask puts one request to the oracle.
func (o *oracle) ask(t *testing.T, req oracleRequest) epploader.Verdict {
	t.Helper()
	v, err := o.program.Ask(req)
	require.NoError(t, err)
	return v
}
