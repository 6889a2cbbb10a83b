//go:build trainsonnet_coredns

// Command coredns is a slim CoreDNS for the test node: the kubernetes plugin
// (it answers <pod>.<headless service>.<namespace>.svc.cluster.local from
// the API server's EndpointSlices) and the five small plugins the node's
// Corefile uses. Leaving out CoreDNS's other plugins (cloud DNS back ends,
// etcd, ...) keeps the module download at about 230 MB instead of 1.7 GB.
//
// This file is not part of the trainsonnet module's build (see the build
// constraint): test/node/build.sh copies it into a wrapper module under the
// cache that requires github.com/coredns/coredns and builds it there with
// -tags trainsonnet_coredns.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

func init() {
	// The order in which the plugins handle a query, as in CoreDNS's
	// plugin.cfg; a Corefile may only use the plugins named here.
	dnsserver.Directives = []string{"bind", "ready", "health", "errors", "log", "kubernetes"}
}

func main() { coremain.Run() }
