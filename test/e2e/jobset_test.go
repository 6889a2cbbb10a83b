package e2e

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainsonnet/trainsonnet/test/kube"
)

// The JobSet controller of the harness (test/cluster/up.sh WITH_JOBSET=1,
// JobSet v0.12.0 as a host process, its webhooks served by URL for the
// namespaces labelled trainsonnet.test/jobset=true): what the JobSet form
// of the prototypes (issue 46) stands on. A JobSet of a lead and two
// workers, written by hand as its docs show, is admitted by its webhooks,
// and the controller makes its Jobs, its headless Service and its pods,
// each with the stable name JobSet promises; a JobSet its validating
// webhook refuses is refused.

func jobSetTest(t *testing.T) *kube.Kubectl {
	t.Helper()
	k := kwokTest(t)
	kube.JobSet(t)
	return k
}

// handJobSet: %[1]s the success policy's replicated job, %[2]s and %[3]s
// the pool's label and value (its nodes and their taint).
const handJobSet = `apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: train
spec:
  network:
    enableDNSHostnames: true
  successPolicy:
    operator: All
    targetReplicatedJobs: [%[1]s]
  failurePolicy:
    maxRestarts: 2
  replicatedJobs:
  - name: lead
    replicas: 1
    template:
      spec:
        parallelism: 1
        completions: 1
        backoffLimit: 0
        template:
          spec:
            restartPolicy: Never
            nodeSelector: {%[2]s: %[3]s}
            tolerations: [{key: %[2]s, operator: Equal, value: %[3]s, effect: NoSchedule}]
            containers:
            - {name: lead, image: busybox, command: [sleep, "3600"]}
  - name: workers
    replicas: 1
    template:
      spec:
        parallelism: 2
        completions: 2
        completionMode: Indexed
        backoffLimit: 0
        template:
          spec:
            restartPolicy: Never
            nodeSelector: {%[2]s: %[3]s}
            tolerations: [{key: %[2]s, operator: Equal, value: %[3]s, effect: NoSchedule}]
            containers:
            - {name: worker, image: busybox, command: [sleep, "3600"]}
`

func TestKwokJobSet(t *testing.T) {
	k := jobSetTest(t)
	ctx := t.Context()
	pool := kube.UniqueName("js")
	createPool(t, k, pool, []poolNode{poolNodeOf(pool, "a", "", 0, "")})
	ns := k.Namespace(t, "jobset", kube.Baseline)
	k.JobSetNamespace(t, ns)

	// refused by the validating webhook: a success policy naming no
	// replicated job of the set
	bad := fmt.Sprintf(handJobSet, "nope", poolLabel, pool)
	out, err := k.Run(ctx, []byte(bad), "apply", "-n", ns, "-f", "-")
	require.Error(t, err, "a JobSet whose success policy names no replicated job: %s", out)
	require.Contains(t, err.Error(), "nope", "the webhook names what is wrong")

	begin := time.Now()
	good := fmt.Sprintf(handJobSet, "lead", poolLabel, pool)
	require.NoError(t, k.Apply(ctx, ns, []byte(good)))
	type jsPod struct {
		Spec   struct{ Hostname, Subdomain string }
		Status struct{ Phase string }
	}
	var pods []jsPod
	require.Eventually(t, func() bool {
		out, err := k.Run(ctx, nil, "get", "pods", "-n", ns, "-l", "jobset.sigs.k8s.io/jobset-name=train", "-o", "json")
		if err != nil {
			return false
		}
		var list struct{ Items []jsPod }
		if json.Unmarshal(out, &list) != nil {
			return false
		}
		pods = list.Items
		running := 0
		for _, p := range pods {
			if p.Status.Phase == "Running" {
				running++
			}
		}
		return running == 3
	}, 2*time.Minute, 500*time.Millisecond, "the JobSet's 3 pods Running")
	hosts := map[string]string{}
	for _, p := range pods {
		hosts[p.Spec.Hostname] = p.Spec.Subdomain
	}
	require.Equal(t, map[string]string{"train-lead-0-0": "train", "train-workers-0-0": "train", "train-workers-0-1": "train"}, hosts,
		"every pod named <set>-<replicated job>-<job index>-<pod index>.<set>")
	for _, job := range []string{"train-lead-0", "train-workers-0"} {
		_, err := k.Run(ctx, nil, "get", "job", "-n", ns, job)
		require.NoError(t, err, "the controller made Job %s", job)
	}
	out, err = k.Run(ctx, nil, "get", "service", "-n", ns, "train", "-o", "jsonpath={.spec.clusterIP}")
	require.NoError(t, err, "the controller made the headless Service train")
	require.Equal(t, "None", string(out))
	t.Logf("jobset: controller: 2 Jobs, the headless Service and 3 pods Running %.1f s after the apply", time.Since(begin).Seconds())
}
