// Package verdictbot holds what the module ships besides its code: the
// Slack app manifest (manifest.yaml), embedded so that a binary run outside
// the repository still knows the scopes it was built for (`verdictbot
// doctor` compares them with the ones Slack granted). Package
// internal/manifest parses it.
package verdictbot

import _ "embed"

// Manifest is manifest.yaml, the Slack app manifest the app is created
// from, as built into the binary. Do not modify it.
//
//go:embed manifest.yaml
var Manifest []byte
