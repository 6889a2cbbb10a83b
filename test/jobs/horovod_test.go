package jobs_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trainsonnet/trainsonnet/generator"
	"github.com/trainsonnet/trainsonnet/test/kube"
)

// TestHorovod runs a generated horovod job to completion on the real node.
func TestHorovod(t *testing.T) {
	s := newSuite(t)
	for _, tc := range []struct {
		name string
		run  func(*testing.T, *suite)
	}{
		{"chart-values", testChartValues},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			t.Cleanup(func() { t.Logf("case took %.1fs (with namespace create and delete)", time.Since(start).Seconds()) })
			tc.run(t, s)
		})
	}
}

// chartValues is a values file in the shape of the Helm stable/horovod
// chart, as its users wrote them: master (now the driver) with its args,
// per-role env, ssh on a port of the user's choosing. %s are the image's
// repository and tag, and the args.
const chartValues = `worker:
  number: 2
  image:
    repository: %s
    tag: %q
    pullPolicy: Never
  env:
    ROLE: worker
ssh:
  port: 32222
master:
  env:
    ROLE: driver
  args:
  - %q
`

// rankRoleExec prints, from every one of the 3 ranks, its rank, host and
// ROLE: the driver is rank 0, and the ranks on the workers, started over
// ssh, must see the workers' own ROLE.
const rankRoleExec = `mpirun -np 3 sh -c 'echo "rank $OMPI_COMM_WORLD_RANK of $OMPI_COMM_WORLD_SIZE on $(hostname) as $ROLE"'`

// testChartValues: a chart user's values file as it is. The driver is a
// rank listed first in the hostfile, waits for both workers on ssh.port,
// runs the args and completes; the ranks see their own pod's env; the
// workers are stopped by the driver, so both Jobs complete and nothing
// keeps running.
func testChartValues(t *testing.T, s *suite) {
	jc := s.start(t, "chart", kube.Baseline) // root pods pass baseline, not restricted
	jc.launcher = "driver"
	repo, tag, ok := strings.Cut(s.node.Image, ":")
	require.True(t, ok && !strings.Contains(tag, "/"), "test image %q has a tag", s.node.Image)
	values := fmt.Sprintf(chartValues, repo, tag, rankRoleExec)
	res, err := s.g.Render(jc.ctx, generator.NewParams("horovod").Set("name", jc.name).AddFile("values.yaml", []byte(values)))
	require.NoError(t, err)
	require.Contains(t, strings.Join(res.Warnings, "\n"), "master: now called driver", "the chart's master key works, with a warning")
	jc.apply(jc.yaml(res))

	require.Equal(t, "Complete", jc.waitJob(jc.name+"-driver"), "driver Job")
	require.Equal(t, "Complete", jc.waitJob(jc.name+"-worker"), "worker Job")

	hostfile, err := jc.kubectl(nil, "get", "configmap", jc.name+"-config", "-o", "jsonpath={.data.hostfile}")
	require.NoError(t, err)
	driverHost := jc.name + "-driver." + jc.name
	require.Equal(t, driverHost+" slots=1\n"+jc.workerHost(0)+" slots=1\n"+jc.workerHost(1)+" slots=1\n", string(hostfile), "hostfile: the driver first")

	dp := jc.launcherPod()
	log := jc.logs(dp.name(), "driver")
	t.Logf("driver log:\n%s", log)
	ls := lines(log)
	require.Contains(t, ls, fmt.Sprintf("rank 0 of 3 on %s-driver as driver", jc.name), "the driver is rank 0")
	for i := range 2 {
		require.Contains(t, ls, fmt.Sprintf("rank %d of 3 on %s-worker-%d as worker", i+1, jc.name, i),
			"rank %d ran on worker %d, with the worker's env", i+1, i)
		require.NotEmpty(t, lineWith(log, jc.workerHost(i)+" answered"), "the driver waited for worker %d over ssh", i)
	}
	require.NotEmpty(t, lineWith(log, "all 2 workers reachable"))
	require.NotEmpty(t, lineWith(log, "serving ssh on port 32222"), "the driver serves ssh on ssh.port")
	code, err := dp.exitCode("driver")
	require.NoError(t, err)
	require.Zero(t, code, "driver exit code")

	workers := jc.requireAllSucceeded(2)
	for _, w := range workers {
		wlog := jc.logs(w.name(), "worker")
		assert.NotEmpty(t, lineWith(wlog, "serving ssh on port 32222 as user root"), "worker %s serves ssh on ssh.port; its log:\n%s", w.name(), wlog)
	}
	jc.requireNothingRunning()
	jc.requireNetworkPolicySelectsJob(3)
}
