package jobs_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trainsonnet/trainsonnet/generator"
	"github.com/trainsonnet/trainsonnet/test/kube"
)

// TestHorovod runs a generated horovod job to completion on the real node.
func TestHorovod(t *testing.T) {
	runCases(t, []jobTest{
		{"chart-first-example", testChartFirstExample},
	})
}

// chartExample is the first example of the chart's README as its users
// wrote it (master:, keys pasted under ssh, GPUs, the chart's mpirun line
// with its /horovod/generated/hostfile), from examples/.
const chartExample = "../../examples/horovod/chart-values/gpu.yaml"

// nodeValues is what this node needs changed in chartExample, given as a
// second params file the way a user would: the test image instead of the
// chart's (which is not here, and has no registry to come from), no GPU
// limit (the node has no GPUs; slots are then 1, and the chart's -np 3 is
// still driver + 2 workers), the chart's mpirun line running a command
// that prints every rank instead of the Keras script, per-role env, and
// ssh on a port of the user's choosing so that ssh.port is checked end to
// end. %s: the image's repository and tag (twice), and the args.
const nodeValues = `resources: {}
ssh:
  port: 32222
worker:
  image:
    repository: %[1]s
    tag: %[2]q
    pullPolicy: Never
  env:
    ROLE: worker
master:
  image:
    repository: %[1]s
    tag: %[2]q
    pullPolicy: Never
  env:
    ROLE: driver
  args:
  - %[3]q
`

// nodeValuesAsWorker is nodeValues without the per-role env: the driver's
// pod is then a worker's (the same image, resources and env), and the
// driver runs as worker 0 of one Indexed Job (driverAsWorker). %s: the
// image's repository and tag, and the args.
const nodeValuesAsWorker = `resources: {}
ssh:
  port: 32222
worker:
  image:
    repository: %[1]s
    tag: %[2]q
    pullPolicy: Never
master:
  image:
    repository: %[1]s
    tag: %[2]q
    pullPolicy: Never
  args:
  - %[3]q
`

// chartArgs is the chart example's master.args with the Keras script
// replaced: every rank prints its rank, host and ROLE, the ranks on the
// workers (started over ssh) seeing the workers' own ROLE.
const chartArgs = `mpirun -np 3 --hostfile /horovod/generated/hostfile --mca orte_keep_fqdn_hostnames t --allow-run-as-root --display-map --tag-output --timestamp-output sh -c 'echo "rank $OMPI_COMM_WORLD_RANK of $OMPI_COMM_WORLD_SIZE on $(hostname) as $ROLE"'`

// testChartFirstExample: the chart's first example as a params file. The driver
// is a rank listed first in the hostfile, waits for both workers on
// ssh.port, runs the chart's mpirun line and completes; the ranks see their
// own pod's env; the workers are stopped by the driver, so both Jobs
// complete and nothing keeps running.
//
// The chart's second example (host network, sshd on 32222) cannot run
// here: its pods are kept one per node, and this cluster has one node.
// TestKwokHorovodHostNetwork (test/e2e) checks that placement with the real
// scheduler on fake nodes, and the goldens pin the objects.
func testChartFirstExample(t *testing.T, s *suite) {
	jc := s.start(t, "chart", kube.Baseline) // root pods pass baseline, not restricted
	jc.launcher = "driver"
	repo, tag, ok := strings.Cut(s.node.Image, ":")
	require.True(t, ok && !strings.Contains(tag, "/"), "test image %q has a tag", s.node.Image)
	example, err := os.ReadFile(chartExample)
	require.NoError(t, err)
	res, err := s.g.Render(jc.ctx, generator.NewParams("horovod").Set("name", jc.name).
		AddFile(chartExample, example).
		AddFile("node.yaml", []byte(fmt.Sprintf(nodeValues, repo, tag, afterLauncherResolves(jc.name+"-driver", chartArgs)))))
	require.NoError(t, err)
	warnings := strings.Join(res.Warnings, "\n")
	require.Contains(t, warnings, "master: now called driver", "the chart's master key works, with a warning")
	require.Contains(t, warnings, "ssh.hostKey: not used", "pasted keys are not used, with a warning")
	jc.apply(jc.yaml(res))

	require.Equal(t, "Complete", jc.waitJob(jc.name+"-driver"), "driver Job")
	require.Equal(t, "Complete", jc.waitJob(jc.name+"-worker"), "worker Job")

	hostfile, err := jc.kubectl(nil, "get", "configmap", jc.name+"-config", "-o", "jsonpath={.data.hostfile}")
	require.NoError(t, err)
	driverHost := jc.name + "-driver." + jc.name
	require.Equal(t, driverHost+" slots=1\n"+jc.workerHost(0)+" slots=1\n"+jc.workerHost(1)+" slots=1\n", string(hostfile), "hostfile: the driver first")

	_, log, code := jc.launcherResult()
	t.Logf("driver log:\n%s", log)
	// --tag-output and --timestamp-output prefix every line of a rank.
	require.NotEmpty(t, lineWith(log, fmt.Sprintf("rank 0 of 3 on %s-driver as driver", jc.name)), "the driver is rank 0")
	for i := range 2 {
		require.NotEmpty(t, lineWith(log, fmt.Sprintf("rank %d of 3 on %s-worker-%d as worker", i+1, jc.name, i)),
			"rank %d ran on worker %d, with the worker's env", i+1, i)
	}
	require.NotEmpty(t, lineWith(log, "all 2 workers reachable"))
	require.NotEmpty(t, lineWith(log, "serving ssh on port 32222"), "the driver serves ssh on ssh.port")
	require.Zero(t, code, "driver exit code")

	workers := jc.requireAllSucceeded(2)
	for _, w := range workers {
		wlog := jc.logs(w.name(), "worker")
		assert.NotEmpty(t, lineWith(wlog, "serving ssh on port 32222 as user root"), "worker %s serves ssh on ssh.port; its log:\n%s", w.name(), wlog)
	}
	jc.requireNothingRunning()
	jc.requireNetworkPolicySelectsJob(3)
}
