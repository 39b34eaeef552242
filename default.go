// Package awaken holds the built-in default project: the configuration,
// the example plugin, the scripted scenario and the sandbox workspace that
// awaken-lua runs where no awaken.toml is found, so `awaken-lua run` works
// in any directory. It is the repository's own default project (what
// `make run` runs), embedded, so the two cannot drift apart.
package awaken

import "embed"

// Default is the default project, rooted like the repository.
//
//go:embed awaken.toml scripts/guard.lua testdata/scenarios/demo.toml all:testdata/workspace
var Default embed.FS
