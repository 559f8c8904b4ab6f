// SPDX-License-Identifier: Apache-2.0

package api

//go:generate go run ./internal/defaultsgen -api . -out zz_generated.defaults.go
