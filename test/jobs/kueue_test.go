package jobs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainsonnet/trainsonnet/generator"
	"github.com/trainsonnet/trainsonnet/test/kube"
)

// TestKueuePreemption: a training job on a Kueue queue, running on the
// real node, is preempted by a job of a higher WorkloadPriorityClass;
// Kueue requeues it, and once the preemptor has ended and it is admitted
// again, it completes, resuming from the last state its training wrote to
// the shared claim (testdata/train.py --resume: every 5 steps).
//
//   - pytorch: one Indexed Job, Kueue's Job integration: preempted, the Job
//     is suspended (its pods deleted, no failure counted) and resumed.
//   - openmpi: the launcher's and the workers' Jobs, one pod group: Kueue
//     marks the pods TerminationTarget and deletes them, the kubelet ends
//     them, the Jobs ignore those failures and make new pods, which wait
//     at their scheduling gates until the group is admitted again. This
//     route (pods of Jobs as a pod group) is one Kueue's docs describe for
//     pods of no Kueue-managed owner; this case pins that it works.
//   - openmpi-jobset: openmpi as one JobSet (jobset), Kueue's JobSet
//     integration: one workload of a PodSet per replicated Job; a second
//     such job, for which the cut quota has no room, waits with none of
//     its pods running; preempted, the JobSet is suspended (its Jobs'
//     pods deleted, no failure counted, no restart of the set) and
//     resumed once admitted again.
//
// The queue's CPU quota is cut to what the training job uses, so the
// preemptor, the same job with a command of about 20 s (a shorter
// training, a sleep), fits only in its place. Each case logs its
// training's line (TestTraining) and
//
//	kueue: <prototype>: preempted at step <D>, requeued, resumed at step <S> (<K> steps redone), completed (the training line above)
//
// and openmpi-jobset besides
//
//	jobset: kueue: openmpi: one workload of <P> pods; a second waited with 0 of <P> pods running; eviction: requeued intact
func TestKueuePreemption(t *testing.T) {
	kube.Kueue(t)
	runCases(t, []jobTest{
		{"pytorch", testKueuePreemptPyTorch},
		{"openmpi", testKueuePreemptOpenMPI},
		{"openmpi-jobset", testKueuePreemptJobSet},
	})
}

const (
	// kueueSteps of kueueStepSeconds each; the state every kueueEvery.
	kueueSteps, kueueEvery, kueueStepSeconds = 80, 5, "0.5"
	// kueueDoneBefore: the preemptor comes once this many steps are done.
	kueueDoneBefore = 12
)

// kueueTrain is the training command of the cases: train.py resuming from
// and writing its state to dir on the claim.
func kueueTrain(dir string) string {
	return trainingDir + "/train.py --steps " + strconv.Itoa(kueueSteps) + " --every " + strconv.Itoa(kueueEvery) +
		" --step-seconds " + kueueStepSeconds + " --resume " + dir
}

func testKueuePreemptPyTorch(t *testing.T, s *suite) {
	jc := s.start(t, "kueue-torch", kube.Restricted)
	q := s.k.KueueQueue(t, jc.ns, nil, nil)
	claimDir := jc.createLocalClaim(storeClaim)
	params := func(name, priority, exec string) *generator.Params {
		return jc.pytorchParams().Set("name", name).
			Set("queue", "lq").Set("workloadPriorityClass", priority).Set("exec", exec)
	}
	train, err := s.g.Render(jc.ctx, params(jc.name, kube.KueueLow, kueueTrain(`"$TRAIN_DIR"`)).Set("storage.claim.name", storeClaim))
	require.NoError(t, err)
	preemptor, err := s.g.Render(jc.ctx, params("urgent", kube.KueueHigh, trainingDir+"/train.py --steps 40 --step-seconds 0.5"))
	require.NoError(t, err)
	jc.kueuePreempt("pytorch", q, claimDir+"/train", train, preemptor, 3, func() string {
		job := jc.name + "-worker"
		logs := jc.followLogs("job-name="+job, 3)
		require.Equal(t, "Complete", jc.waitJob(job), "the training Job")
		return logs()
	})
}

func testKueuePreemptOpenMPI(t *testing.T, s *suite) {
	jc := s.start(t, "kueue-mpi", kube.Baseline) // sshd as root
	q := s.k.KueueQueue(t, jc.ns, nil, nil)
	claimDir := jc.createLocalClaim(storeClaim)
	prog, progMount := jc.trainingProgram()
	store, storeMount := storeVolume()
	const workers = 3
	params := func(name, priority, exec string) *generator.Params {
		return generator.NewParams("openmpi").Set("name", name).
			Set("image", s.node.Image).Set("imagePullPolicy", "Never").Set("workers", workers).
			Set("queue", "lq").Set("workloadPriorityClass", priority).
			Set("exec", afterLauncherResolves(name+"-launcher", exec))
	}
	exec := `mpirun -x MASTER_ADDR="$(awk 'NR == 1 { print $1 }' /etc/trainsonnet/hostfile)" -x MASTER_PORT=` + trainingPort +
		` python3 ` + kueueTrain(storePath+"/openmpi")
	train, err := s.g.Render(jc.ctx, params(jc.name, kube.KueueLow, exec).
		Set("volumes", []any{prog, store}).Set("volumeMounts", []any{progMount, storeMount}))
	require.NoError(t, err)
	preemptor, err := s.g.Render(jc.ctx, params("urgent", kube.KueueHigh, "sleep 20"))
	require.NoError(t, err)
	jc.kueuePreempt("openmpi", q, claimDir+"/openmpi", train, preemptor, workers, func() string {
		require.Equal(t, "Complete", jc.waitJob(jc.name+"-launcher"), "launcher Job")
		require.Equal(t, "Complete", jc.waitJob(jc.name+"-worker"), "worker Job")
		_, log, code := jc.launcherResult()
		require.Zero(t, code, "launcher exit code")
		return log
	})
}

func testKueuePreemptJobSet(t *testing.T, s *suite) {
	kube.JobSet(t)
	jc := s.startJobSet(t, "kueue-js", kube.Baseline) // sshd as root
	q := s.k.KueueQueue(t, jc.ns, nil, nil)
	claimDir := jc.createLocalClaim(storeClaim)
	prog, progMount := jc.trainingProgram()
	store, storeMount := storeVolume()
	const workers = 3
	params := func(name, priority, exec string) *generator.Params {
		return generator.NewParams("openmpi").Set("name", name).Set("jobset", true).
			Set("image", s.node.Image).Set("imagePullPolicy", "Never").Set("workers", workers).
			Set("queue", "lq").Set("workloadPriorityClass", priority).Set("exec", exec).
			Set("volumes", []any{prog, store}).Set("volumeMounts", []any{progMount, storeMount})
	}
	exec := `mpirun -x MASTER_ADDR="$(awk 'NR == 1 { print $1 }' /etc/trainsonnet/hostfile)" -x MASTER_PORT=` + trainingPort +
		` python3 ` + kueueTrain(storePath+"/openmpi-js")
	train, err := s.g.Render(jc.ctx, params(jc.name, kube.KueueLow, exec))
	require.NoError(t, err)
	second, err := s.g.Render(jc.ctx, params("second", kube.KueueLow, "sleep 20"))
	require.NoError(t, err)
	preemptor, err := s.g.Render(jc.ctx, params("urgent", kube.KueueHigh, "sleep 20"))
	require.NoError(t, err)
	pods := workers + 1
	jc.second = func() {
		wls, err := jc.s.k.Workloads(jc.ctx, jc.ns, jc.name)
		require.NoError(t, err)
		require.Len(t, wls, 1, "one workload: %s", kube.DescribeWorkloads(wls))
		require.Equal(t, pods, wls[0].Pods(), "of every pod: %s", kube.DescribeWorkloads(wls))
		jc.apply(jc.yaml(second))
		require.Eventually(t, func() bool {
			wls, err := jc.s.k.Workloads(jc.ctx, jc.ns, "second")
			return err == nil && len(wls) == 1 && wls[0].Pending()
		}, 2*time.Minute, pollInterval, "the second job's workload waits")
		for range 5 {
			require.Empty(t, jc.pods(instanceLabel+"=second"), "the second job has no pod while it waits")
			time.Sleep(time.Second)
		}
		_, err = jc.kubectl(jc.yaml(second), "delete", "--wait=false", "-f", "-")
		require.NoError(t, err)
	}
	jc.kueuePreempt("openmpi", q, claimDir+"/openmpi-js", train, preemptor, workers, func() string {
		require.Equal(t, "Completed", jc.waitJobSet(jc.name), "the JobSet")
		_, log, code := jc.launcherResult()
		require.Zero(t, code, "launcher exit code")
		return log
	})
	require.Equal(t, "0", jc.jobSetStatus(jc.name, "restarts"), "the eviction restarted nothing")
	t.Logf("jobset: kueue: openmpi: one workload of %d pods; a second waited with 0 of %d pods running; eviction: requeued intact", pods, pods)
}

// kueuePreempt applies train, waits until its training has done
// kueueDoneBefore steps (read in progress, in the claim's directory dir),
// cuts the queue's CPU to what train uses, applies preemptor, and checks
// that train loses every pod but none of its Jobs' retries, that it runs
// again once preemptor has completed, and that finish (which waits for it
// to complete and returns its log) shows a training of ranks ranks
// resumed from its last state.
func (jc *jobCase) kueuePreempt(proto string, q *kube.KueueQueue, dir string, train, preemptor *generator.Result, ranks int, finish func() string) {
	t := jc.t
	t.Helper()
	jc.apply(jc.yaml(train))
	var wls []*kube.Workload
	require.Eventually(t, func() bool {
		var err error
		wls, err = jc.s.k.Workloads(jc.ctx, jc.ns, jc.name)
		return err == nil && len(wls) == 1 && wls[0].Condition("Admitted")
	}, 2*time.Minute, pollInterval, "the training job is admitted as one workload")
	usage := wls[0].Usage("cpu")
	require.False(t, usage.IsZero(), "the training job's workload holds CPU: %s", kube.DescribeWorkloads(wls))
	require.NoError(t, q.Cut(jc.ctx, map[string]string{"cpu": usage.String()}))
	if jc.second != nil {
		jc.second()
	}
	done := 0
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "progress"))
		done, _ = strconv.Atoi(string(b))
		return err == nil && done >= kueueDoneBefore
	}, 4*time.Minute, pollInterval, "the training does %d steps", kueueDoneBefore)

	jc.apply(jc.yaml(preemptor))
	require.Eventually(t, func() bool {
		wls, err := jc.s.k.Workloads(jc.ctx, jc.ns, jc.name)
		return err == nil && !slices.ContainsFunc(wls, func(w *kube.Workload) bool { return w.Condition("Admitted") }) && jc.noneRunning(jc.name)
	}, 2*time.Minute, pollInterval, "the training job's pods go once the preemptor is admitted")
	b, err := os.ReadFile(filepath.Join(dir, "progress"))
	require.NoError(t, err)
	preemptedAt, _ := strconv.Atoi(string(b))
	// Waiting again: a Job's workload evicted, or (a pod group) its
	// pods' workload made anew once they are, none admitted.
	wls, err = jc.s.k.Workloads(jc.ctx, jc.ns, jc.name)
	require.NoError(t, err)
	for _, w := range wls {
		require.False(t, w.Condition("Admitted"), "the training job waits again: %s", kube.DescribeWorkloads(wls))
	}
	jc.requireNoFailures(jc.name)

	log := finish()
	t.Logf("the training's log after its readmission:\n%s", log)
	jc.requireNoFailures(jc.name)
	m := regexp.MustCompile(`train: resumed at step (\d+), redoing (\d+) steps`).FindStringSubmatch(log)
	require.NotNil(t, m, "the training resumed from its state")
	at, _ := strconv.Atoi(m[1])
	redone, _ := strconv.Atoi(m[2])
	require.GreaterOrEqual(t, at, kueueEvery, "it resumed from a state written before the preemption")
	require.Less(t, redone, kueueEvery+2, "it redid at most the steps since the last state (and the one under way)")
	jc.requireTrained(proto, ranks, log)
	t.Logf("kueue: %s: preempted at step %d, requeued, resumed at step %d (%d steps redone), completed (the training line above)",
		proto, preemptedAt, at, redone)
}

// noneRunning: no pod of the job named job is running.
func (jc *jobCase) noneRunning(job string) bool {
	return jc.noneRunningOf(instanceLabel + "=" + job)
}

// noneRunningOf: no pod of the label selector is running.
func (jc *jobCase) noneRunningOf(selector string) bool {
	for _, p := range jc.pods(selector) {
		if p.Status.Phase == "Running" {
			return false
		}
	}
	return true
}

// requireNoFailures: no Job of the job named job has failed or counted a
// failed pod.
func (jc *jobCase) requireNoFailures(job string) {
	jc.t.Helper()
	if jc.jobset {
		require.Equal(jc.t, "0", jc.jobSetStatus(job, "restarts"), "JobSet %s restarted nothing", job)
	}
	out, err := jc.kubectl(nil, "get", "jobs", "-l", instanceLabel+"="+job, "-o", "jsonpath={range .items[*]}{.metadata.name} {.status.failed} {.status.conditions[?(@.type==\"Failed\")].status}{\"\\n\"}{end}")
	require.NoError(jc.t, err)
	for _, l := range lines(string(out)) {
		f := strings.Fields(l)
		require.True(jc.t, len(f) == 1 || f[1] == "0" && (len(f) == 2 || f[2] != "True"),
			"Job %s counted no failure (failed pods, Failed): %q", f[0], l)
	}
}

// TestKueueCleanup: a queued job of several Jobs (one pod group) lets go
// of its pods and its quota when it ends for good: deleted while it runs
// (kubectl delete -f), or failed, once its Jobs' ttlSecondsAfterFinished
// has passed. With Kueue's own finalizer on the pods, both would keep the
// pods and the quota until the workload itself was deleted (Kueue waits
// for a replacement of a pod of an unfinished group). Each case logs
//
//	kueue: openmpi: <how it ended>: pods, workload and quota gone <s> s after <what>
func TestKueueCleanup(t *testing.T) {
	kube.Kueue(t)
	runCases(t, []jobTest{
		{"deleted", func(t *testing.T, s *suite) { testKueueCleanup(t, s, false) }},
		{"failed", func(t *testing.T, s *suite) { testKueueCleanup(t, s, true) }},
	})
}

func testKueueCleanup(t *testing.T, s *suite, fail bool) {
	jc := s.start(t, "kueue-end", kube.Baseline) // sshd as root
	s.k.KueueQueue(t, jc.ns, nil, nil)
	p := jc.params("sleep 600")
	p.Queue = "lq"
	if fail {
		p.Exec = "sleep 2; exit 3"
		ttl := 5 * time.Second
		p.TTLSecondsAfterFinished = &ttl
	}
	manifests := jc.yaml(jc.render(p))
	jc.apply(manifests)
	var start time.Time
	how, after := "deleted while it ran", "kubectl delete -f"
	if fail {
		how, after = "failed", "its launcher's Job failed (ttlSecondsAfterFinished 5 s)"
		require.Equal(t, "Failed", jc.waitJob(jc.name+"-launcher"), "the launcher's Job")
		start = time.Now()
	} else {
		require.Eventually(t, func() bool {
			return len(jc.pods(instanceLabel+"="+jc.name)) == 3 && !jc.noneRunning(jc.name)
		}, 2*time.Minute, pollInterval, "the job runs")
		start = time.Now()
		_, err := jc.kubectl(manifests, "delete", "--wait=false", "-f", "-")
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		wls, err := s.k.Workloads(jc.ctx, jc.ns, jc.name)
		if err != nil || len(wls) > 0 || len(jc.pods(instanceLabel+"="+jc.name)) > 0 {
			return false
		}
		out, err := jc.kubectl(nil, "get", "clusterqueue", jc.ns, "-o", "jsonpath={.status.reservingWorkloads}/{.status.admittedWorkloads}")
		return err == nil && string(out) == "0/0"
	}, 2*time.Minute, pollInterval, "the job's pods, its workload and its quota go")
	t.Logf("kueue: openmpi: %s: pods, workload and quota gone %.1f s after %s", how, time.Since(start).Seconds(), after)
}
