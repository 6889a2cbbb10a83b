// Package lib embeds the shared Jsonnet library of the prototypes and the
// runtime scripts their pods run (assets/*.sh and the helper assets/tcp.py, included with importstr).
package lib

import "embed"

// FS holds the *.libsonnet files and the assets/ scripts.
//
//go:embed *.libsonnet assets/*.sh assets/*.py
var FS embed.FS
