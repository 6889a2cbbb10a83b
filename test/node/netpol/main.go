//go:build trainsonnet_netpol

// Command kube-network-policies is the test node's NetworkPolicy enforcer:
// sigs.k8s.io/kube-network-policies (the one kind runs), with a main of
// our own. Upstream's main only knows rest.InClusterConfig (a service
// account token under /var/run/secrets), but on the test node it runs as a
// host process, like kube-proxy, with a kubeconfig of its own. Everything
// else is upstream's controller: the pods that some NetworkPolicy selects
// get their packets sent to an NFQUEUE from an nftables table (family inet,
// a postrouting chain); the controller reads each new connection's first
// packet there and accepts or drops it according to the policies.
//
// This file is not part of the trainsonnet module's build (see the build
// constraint): test/node/build.sh copies it into a wrapper module under the
// cache that requires sigs.k8s.io/kube-network-policies and builds it there
// with -tags trainsonnet_netpol.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/kube-network-policies/pkg/networkpolicy"
)

func main() { os.Exit(run()) }

func run() int {
	var (
		kubeconfig  = flag.String("kubeconfig", "", "kubeconfig of the controller's API client (required)")
		nodeName    = flag.String("hostname-override", "", "name of the Node whose pods this controller guards (required)")
		tableName   = flag.String("nftables-table", "kube-network-policies", "name of the nftables table (family inet) the controller owns")
		queueID     = flag.Int("nfqueue-id", 100, "number of the NFQUEUE the packets go through")
		metricsAddr = flag.String("metrics-bind-address", "127.0.0.1:9080", "address of the /metrics endpoint")
		failOpen    = flag.Bool("fail-open", false, "accept the packets when the controller does not read the queue")
		dnsFix      = flag.Bool("netfilter-bug-1766-fix", true, "queue DNS packets in prerouting (not needed on kernels 6.12+)")
	)
	c := logsapi.NewLoggingConfiguration()
	logsapi.AddGoFlags(c, flag.CommandLine)
	flag.Parse()
	logs.InitLogs()
	if err := logsapi.ValidateAndApply(c, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if *kubeconfig == "" || *nodeName == "" {
		fmt.Fprintln(os.Stderr, "kube-network-policies: --kubeconfig and --hostname-override are required")
		return 2
	}
	if _, _, err := net.SplitHostPort(*metricsAddr); err != nil {
		fmt.Fprintf(os.Stderr, "kube-network-policies: --metrics-bind-address: %v\n", err)
		return 2
	}

	// SIGTERM too (upstream stops on SIGINT only): the controller deletes
	// its nftables table on the way out.
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	logger := klog.FromContext(ctx)

	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		logger.Error(err, "loading the kubeconfig", "path", *kubeconfig)
		return 1
	}
	config.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	config.ContentType = "application/vnd.kubernetes.protobuf"
	clientset, err := kubernetes.NewForConfig(config)
	if err != nil {
		logger.Error(err, "creating the client")
		return 1
	}
	factory := informers.NewSharedInformerFactory(clientset, 0)

	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.Handler())
	go func() { utilruntime.HandleError(http.ListenAndServe(*metricsAddr, mux)) }()

	// Standard NetworkPolicies only: no AdminNetworkPolicy CRDs here.
	controller, err := networkpolicy.NewController(
		clientset,
		factory.Networking().V1().NetworkPolicies(),
		factory.Core().V1().Namespaces(),
		factory.Core().V1().Pods(),
		nil, nil, nil, nil,
		networkpolicy.Config{
			FailOpen:            *failOpen,
			QueueID:             *queueID,
			NodeName:            *nodeName,
			NetfilterBug1766Fix: *dnsFix,
			NFTableName:         *tableName,
		},
	)
	if err != nil {
		logger.Error(err, "creating the network policy controller")
		return 1
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := controller.Run(ctx); err != nil {
			logger.Error(err, "network policy controller")
			cancel()
		}
	}()
	factory.Start(ctx.Done())
	<-ctx.Done()
	// Run removes the nftables table once it returns.
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
	return 0
}
