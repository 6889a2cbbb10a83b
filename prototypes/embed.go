// Package prototypes embeds the built-in prototypes: one Jsonnet file per
// prototype, each a function of its parameters (see lib/trainsonnet.libsonnet).
package prototypes

import "embed"

// FS holds every built-in prototype, named <prototype>.jsonnet.
//
//go:embed *.jsonnet
var FS embed.FS
