// Package jobs is the end-to-end suite that runs the jobs trainsonnet
// generates to completion on a real Kubernetes node (issues 4, 5 and 27):
// the prototypes, rendered in-process with the generator, applied with kubectl
// to the one-node cluster of test/node (kubelet, containerd, CoreDNS and the
// MPI test image localhost/trainsonnet-mpi:<tag>), each case in a namespace
// of its own with the strictest Pod Security level its pods pass.
//
// The tests assert on outcomes - Job conditions, the containers' exit codes
// from pod status, the launcher's log - never on pods merely starting:
//
//   - hosts: 2 workers, mpirun prints every rank's host name; both Jobs
//     complete, every pod Succeeded, and the NetworkPolicy that is on by
//     default exists and selects every pod of the job.
//   - nonroot-existing-secret: the same as mpiuser (1000:1000) in a
//     "restricted" namespace, with the ssh key from a Secret the test
//     creates (ssh.secret).
//   - unreachable-worker: a kustomize overlay over the generated base runs
//     only worker-0 of 2; the launcher exits 124 naming worker-1, its Job
//     fails, worker-0 is told to stop and Succeeds, nothing keeps running.
//   - not-ready-worker: an overlay delays worker-1's sshd by 40 s; while its
//     pod runs and is not Ready the launcher names it as the worker it
//     waits for, then runs mpirun on both; both Jobs complete.
//   - exec-exit-3: exec fails with 3; the launcher Job fails, its container
//     exit code is 3, the workers end.
//   - launcher-gone: the launcher ends (SIGTERM, exit 143) without telling
//     the workers; their watchdog sees its DNS name go away and they exit 0
//     after the grace period.
//   - horovod chart-first-example: the Helm chart's first example
//     (examples/horovod/chart-values/gpu.yaml: master:, pasted keys, GPUs,
//     the chart's mpirun line on /horovod/generated/hostfile) plus a second
//     params file with what this node needs changed: the test image, no
//     GPU limit (the node has none; slots are then 1 and the chart's -np 3
//     still fits), a command that prints every rank instead of the Keras
//     script, per-role env and ssh.port 32222. The driver is rank 0 and
//     first in the hostfile, the ranks on the workers see the workers' own
//     env, both Jobs complete, the workers were stopped by the driver. The
//     chart's second example (host network) needs a node per pod, so it is
//     checked with the real scheduler on kwok nodes (test/e2e) instead.
//
// TestTraining (training_test.go) trains for real: PyTorch's
// DistributedDataParallel over gloo, on 3 ranks, through openmpi's mpirun,
// horovod's chart-shaped driver, pytorch's torchrun (static and elastic),
// and eval reading the checkpoint on the shared storage; each case logs
// "training: <prototype>: <N> ranks, loss <first> -> <last>, parameters
// identical on every rank" once every rank agrees and the loss at least
// halved.
//
// TestTFDistributed (tfdist_test.go) and TestHorovodSpark (spark_test.go)
// run the non-MPI systems with stand-ins for what no reachable registry
// carries (TensorFlow; Spark and Horovod): the stand-ins check what the
// pods give them against the rendered configuration and talk over the
// same addresses, so the wiring and the end of each job are what is
// tested. Each documents its cases.
//
// Every case is bounded by a deadline of its own (3 minutes, less when go
// test's -timeout comes sooner, so that a hung case still ends with its
// diagnostics instead of go test's panic) and, when it fails, logs the
// launcher's and the workers' logs, `kubectl describe` of the job's pods
// and Jobs, and the namespace's events. The tests run side by side, their
// cases sharing the node's slots: five cases at once, whatever test they
// are of (TRAINSONNET_JOBS_PARALLEL), as the jobs mostly wait, the longest
// first; the faults that reach the whole node run first, alone
// (TestFaultsOfTheNode).
//
// The node enforces NetworkPolicies (kube-network-policies, see
// test/node/README.md), so every job above runs behind its policy, and
// TestNetworkPolicy (netpol_test.go) proves what the policy does:
//
//   - enforced: a deny-all ingress policy turns a client pod's connection
//     to a server pod from "connected" into a timeout, and back when it is
//     deleted (the sanity check under the other cases).
//   - job-keeps-others-out: while an openmpi job runs, a pod of the same
//     namespace without the job's labels times out on every worker's sshd
//     port; the launcher connects to the same port; the job completes.
//   - host-network-*: useHostNetwork with 1 worker. The launcher's ssh to
//     the worker on the node's address works; as mpiuser, the callback of
//     the worker's daemon (orted, from the node's address) to mpirun on the
//     launcher's pod IP is dropped by the rendered policy and mpirun times
//     out (issue 10 item 8, as it stands); a second policy admitting ingress
//     from the node's address (ipBlock) makes the same job complete. As
//     root it completes, only because kube-network-policies exempts the
//     node's own root-owned sockets.
//
// Without enforcement (test/node/up.sh with TRAINSONNET_NETPOL=0)
// TestNetworkPolicy skips.
//
// The tests skip unless TRAINSONNET_E2E=1 and the node's environment is
// present (test/node.FromEnv). Run them with
//
//	test/node/with-node.sh env TRAINSONNET_E2E=1 go test -count=1 ./test/jobs/ -v
//
// The whole suite took about 150 s here before TestNetworkPolicy and
// TestTFDistributed (the launcher-gone case alone about 50 s, most of it
// the workers' grace period, launcherGrace 30 s); with TestNetworkPolicy's
// five cases, 419 s on a machine at load 25-45.
//
// TRAINSONNET_KEEP_NAMESPACE=1 keeps each case's namespace for inspection.
package jobs
