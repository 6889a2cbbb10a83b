// Package e2e is the end-to-end suite that applies trainsonnet's manifests
// to a real Kubernetes API server (issue 3). It has no code outside its
// tests:
//
//   - golden_test.go: every case of golden.Renders and golden.Bases and every
//     kustomize overlay under examples/, each in a namespace of its own that
//     enforces the strictest Pod Security level the case's pods pass
//     (podSecurity in golden/<prototype>/cases.yaml says which and why):
//     server-side dry run with strict field validation (server warnings are
//     errors), a real apply, a re-apply that must change nothing, and the
//     namespace deleted again; a namespace of the next stricter level must
//     refuse the case.
//   - sweep_test.go: TestSweep, at least 200 random parameter sets per
//     prototype, drawn from the declared parameter types (draw_test.go), each
//     rendered and sent to the server (server-side dry run, batched); a
//     rejected set is printed as a replayable `trainsonnet gen` command line
//     and params file. TestDeclaredBounds: every int and seconds parameter at
//     each bound it declares.
//   - kwok_test.go: the real scheduler placing jobs on kwok's fake nodes:
//     openmpi's node selector and nvidia.com/gpu capacity, and host network
//     at most one worker per node; horovod's host network at most one pod of
//     the job (driver or worker) per node.
//   - rejection_test.go: a manifest the server rejects fails a test with the
//     server's message in the output, on every path of the suite.
//
// Every test skips unless TRAINSONNET_E2E=1 (and the kwok ones unless
// TRAINSONNET_E2E_KWOK=1). test/e2e.sh runs them against a throw-away
// control plane (test/cluster) and stops it again.
//
// Environment: KUBECTL and KUBECONFIG (written by test/cluster/up.sh),
// TRAINSONNET_SWEEP_SEED (default: random; always logged),
// TRAINSONNET_SWEEP_N (parameter sets per prototype, default 200).
//
// A manifest trainsonnet renders (exit 0) that the server rejects is a bug
// and fails the suite, always: its fix makes the input a validation error
// with an error golden (golden/errors). There is no list of known bugs.
package e2e
