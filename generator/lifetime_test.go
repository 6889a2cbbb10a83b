package generator_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trainsonnet/trainsonnet/generator"
)

// rayLike is a prototype of one's own of the shape the review's Ray
// prototype had (a head that serves, workers that follow it, a submitter
// that leads and says when the job is over), written with the least
// wiring: each role's command under runtime.run, the runtime's files in a
// ConfigMap and its volume in every role. Each %s is replaced by a case's
// change.
const rayLike = `
local batch = import 'batch.libsonnet';
local common = import 'common.libsonnet';
local roles = import 'roles.libsonnet';
local runtime = import 'runtime.libsonnet';
local ts = import 'trainsonnet.libsonnet';
local end = runtime.endPort(8299);
local watch(p) = roles.presenceName(p, 'submitter');
ts.prototype({
  name: 'ray',
  summary: 'A Ray job: a head, workers, and a submitter that leads',
  description: 'A Ray job: a head, workers, and a submitter that leads.',
  params: common.params('ray') + batch.params('the submitter') + { workers: ts.params.int('Number of workers.', default=2, min=1) },
  render(p)::
    local config = { apiVersion: 'v1', kind: 'ConfigMap', metadata: common.metadata('ray', p, p.name + '-runtime'), data: runtime.files };
    local rt = { volumes: [runtime.volume(p.name + '-runtime')], mounts: [runtime.mount] };
    local head = rt + { name: 'head', image: 'ray:2', ports: [{ name: 'gcs', port: 6379 }],
      command: runtime.run(['ray', 'start', '--head', '--block'], watch=watch(p), hearEnd=end) };
    local worker = rt + { name: 'worker', kind: 'IndexedJob', count: p.workers, image: 'ray:2',
      command: runtime.run(['ray', 'start', '--block'], watch=watch(p), hearEnd=end) };
    local submitter = rt + { name: 'submitter', lead: true, image: 'ray:2',
      command: runtime.run(['ray', 'job', 'submit', '--wait', '--', 'python', 'train.py'], tellEnd=end) };
    local rs = [head, worker, submitter];
    %s
})
`

func renderRay(t *testing.T, render string, args ...any) (*generator.Result, error) {
	t.Helper()
	dir := t.TempDir()
	src := strings.Replace(rayLike, "%s", render, 1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ray.jsonnet"), []byte(src), 0o644))
	g, err := generator.New(generator.Options{PrototypePaths: []string{dir}})
	require.NoError(t, err)
	p := generator.NewParams("ray").Set("name", "r")
	for i := 0; i+1 < len(args); i += 2 {
		p.Set(args[i].(string), args[i+1])
	}
	return g.Render(context.Background(), p)
}

type rayPod struct {
	Kind     string
	Metadata struct{ Name string }
	Spec     struct {
		Template struct {
			Spec struct {
				Containers []struct {
					Env []struct{ Name, Value string }
				}
			}
		}
	}
}

// TestLifetimeRelation: roles.objects makes what a lead and its followers
// need from the relation their commands state (runtime.run's watch,
// hearEnd and tellEnd), so that the review's three omissions cannot
// happen: the lead's presence Service and the end's env are made, and a
// missing ConfigMap or runtime volume is one line naming what to add; a
// relation that cannot work is one line too.
func TestLifetimeRelation(t *testing.T) {
	res, err := renderRay(t, `[config] + roles.objects('ray', p, rs)`, "backoffLimit", 2)
	require.NoError(t, err)
	env := map[string]map[string]string{}
	var services []string
	for _, o := range res.Objects {
		var obj rayPod
		require.NoError(t, json.Unmarshal(o.JSON(), &obj))
		if obj.Kind == "Service" {
			services = append(services, obj.Metadata.Name)
		}
		if obj.Kind == "Job" {
			env[obj.Metadata.Name] = map[string]string{}
			for _, e := range obj.Spec.Template.Spec.Containers[0].Env {
				env[obj.Metadata.Name][e.Name] = e.Value
			}
		}
	}
	assert.Contains(t, services, "r-submitter", "the lead's presence Service, which the followers watch")

	// a follower by a runtime of its own (mpi.sh's workers) declares it
	res, err = renderRay(t, `[config] + roles.objects('ray', p, [rs[0] + {command: ['ray'], follows: 'submitter'}, rs[2] + {command: ['ray']}])`)
	require.NoError(t, err)
	services = nil
	for _, o := range res.Objects {
		if o.Kind == "Service" {
			services = append(services, o.Name)
		}
	}
	assert.Contains(t, services, "r-submitter", "follows: the lead's presence Service")
	for _, job := range []string{"r-head", "r-worker", "r-submitter"} {
		assert.Equal(t, "3", env[job]["TS_FOLLOWERS"], "%s: the head and 2 workers hear the end", job)
		assert.Equal(t, "r-submitter", env[job]["TS_END_TOKEN"], job)
		assert.Equal(t, "0", env[job]["TS_END_ON_FAILURE"], "%s: with retries, a failed lead says nothing", job)
	}

	for name, c := range map[string]struct{ render, want string }{
		"no ConfigMap": {`roles.objects('ray', p, rs)`,
			"volume trainsonnet-config mounts ConfigMap r-runtime (and 2 more pod templates), which the render does not make"},
		"no runtime volume": {`[config] + roles.objects('ray', p, [rs[0], rs[1] + {volumes: [], mounts: []}, rs[2]])`,
			"roles.objects: role worker runs its command under the runtime (runtime.run), whose script is in the job's ConfigMap: add runtime.volume(<that ConfigMap>) to its volumes and runtime.mount to its mounts"},
		"a follower of no lead": {`[config] + roles.objects('ray', p, [rs[0] + {command: runtime.run(['ray'], watch=roles.presenceName(p, 'head'))}, rs[1], rs[2]])`,
			"roles.objects: role head follows r-head (runtime.run's watch), role head's, which is not the lead: a follower watches the lead, roles.presenceName(p, 'submitter')"},
		"a follower of a role that is not the lead": {`[config] + roles.objects('ray', p, [rs[0], rs[1], rs[2] + {kind: 'Deployment', lead: false}, {name: 'x', image: 'x', lead: true}])`,
			"roles.objects: role head follows r-submitter (runtime.run's watch), role submitter's, which is not the lead"},
		"a declared follower of a role that is not the lead": {`[config] + roles.objects('ray', p, [rs[0] + {command: ['ray'], follows: 'worker'}, rs[1] + {command: ['ray']}, rs[2] + {command: ['ray']}])`,
			"roles.objects: role head follows r-worker (follows: worker), role worker's, which is not the lead: a follower follows the lead, follows: 'submitter'"},
		"a lead that is a Deployment": {`[config] + roles.objects('ray', p, [rs[0], rs[1], rs[2] + {kind: 'Deployment', command: ['ray']}])`,
			"roles.objects: role submitter is followed (head, worker watch it) and is a Deployment, which never ends: the lead that followers stop with is a Job"},
		"an end port that collides": {`[config] + roles.objects('ray', p, [rs[0], rs[1], rs[2] + {sidecars: [{name: 'dash', image: 'ray:2', ports: [{name: 'dashboard', containerPort: 8300}]}]}])`,
			"roles.objects: role submitter's end port 8300 (tellEnd) is dash's dashboard, busy when the lead's command has ended"},
		"followers that hear another port": {`[config] + roles.objects('ray', p, [rs[0] + {command: runtime.run(['ray'], watch=watch(p), hearEnd=9000)}, rs[1], rs[2]])`,
			"roles.objects: role head hears the end on port 9000, and the lead tells it on 8300: give both the same runtime.endPort(port)"},
		"a lead that tells nothing": {`[config] + roles.objects('ray', p, [rs[0], rs[1], rs[2] + {command: ['ray']}])`,
			"roles.objects: role head hears the end on port 8300, and no role tells it"},
		"a miscounted end": {`[config] + roles.objects('ray', p, [rs[0], rs[1], rs[2] + {env: runtime.endEnv('r-submitter', 1, 0)}])`,
			"roles.objects: role submitter's env says TS_FOLLOWERS=1, and 3 pods hear the end (head, worker): leave the end's env to roles.objects"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := renderRay(t, c.render)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.NotContains(t, err.Error(), "\n", "one line")
		})
	}
}

// TestGroupRelation: a role that runs as a static group (runtime.run's
// group) gets the Job rule that makes its ended pods again without a
// retry spent, and a group that is not its role's pods behind the job's
// Service, led by index 0, is refused in one line.
func TestGroupRelation(t *testing.T) {
	const group = `local g(over={}, group={}) = rt + { name: 'worker', kind: 'IndexedJob', count: p.workers, dns: true, lead: true,
      retryPerIndex: true, image: 'ray:2', command: runtime.run(['train'], group={ service: p.name, count: p.workers, lead: p.name + '-worker-0.' + p.name } + group) } + over;
    `
	res, err := renderRay(t, group+`[config] + roles.objects('ray', p, [g()])`, "backoffLimit", 2)
	require.NoError(t, err)
	var job struct {
		Kind string
		Spec struct {
			PodFailurePolicy struct {
				Rules []struct {
					Action      string
					OnExitCodes *struct {
						ContainerName, Operator string
						Values                  []int
					}
				}
			}
		}
	}
	found := false
	for _, o := range res.Objects {
		require.NoError(t, json.Unmarshal(o.JSON(), &job))
		if job.Kind != "Job" {
			continue
		}
		found = true
		rules := job.Spec.PodFailurePolicy.Rules
		require.Len(t, rules, 3, "the disruptions' two, then the group's")
		assert.Equal(t, "Ignore", rules[2].Action)
		require.NotNil(t, rules[2].OnExitCodes)
		assert.Equal(t, "worker", rules[2].OnExitCodes.ContainerName)
		assert.Equal(t, []int{75}, rules[2].OnExitCodes.Values)
	}
	assert.True(t, found, "the group's Job")

	for name, c := range map[string]struct{ render, want string }{
		"a group of a Job": {`[config] + roles.objects('ray', p, [g({kind: 'Job', retryPerIndex: false})])`,
			"roles.objects: role worker runs as a static group (runtime.run's group), which is the pods of one IndexedJob with dns: true, index 0 leading"},
		"a group without names": {`[config] + roles.objects('ray', p, [g({dns: false})])`,
			"which is the pods of one IndexedJob with dns: true"},
		"a miscounted group": {`[config] + roles.objects('ray', p, [g(group={count: 3})])`,
			`roles.objects: role worker runs as a static group (runtime.run's group), which is {"count":"2","lead":"r-worker-0.r","service":"r"} here (the job's Service, the role's count, its index 0), not {"count":"3","lead":"r-worker-0.r","service":"r"}`},
		"a group led by another": {`[config] + roles.objects('ray', p, [g(group={lead: 'r-worker-1.r'})])`,
			`not {"count":"2","lead":"r-worker-1.r","service":"r"}`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := renderRay(t, group+c.render, "backoffLimit", 2)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.NotContains(t, err.Error(), "\n", "one line")
		})
	}
}

// TestJobSetRelation: the same roles, with jobset, make one JobSet whose
// policies say the relation the Jobs form's pods spoke: the lead's success
// ends the set, backoffLimit is the set's restarts, and the commands lose
// the watch, the end port and the group (the runtime stays, for its
// signals), the env the end's variables; no presence Service.
// A role that starts after another orders the set (InOrder). What a
// JobSet cannot hold is one line.
func TestJobSetRelation(t *testing.T) {
	res, err := renderRay(t, `[config] + roles.objects('ray', p, [rs[0] + {after: 'worker'}, rs[1], rs[2] + {env: runtime.endEnv('r-submitter', 3, 0)}])`,
		"backoffLimit", 2, "jobset", true, "activeDeadlineSeconds", 600)
	require.NoError(t, err)
	var kinds []string
	var set struct {
		Spec struct {
			Network       struct{ Subdomain string }
			SuccessPolicy struct {
				Operator             string
				TargetReplicatedJobs []string
			}
			FailurePolicy struct {
				MaxRestarts     int
				RestartStrategy string
				Rules           []struct {
					Action              string
					OnJobFailureReasons []string
				}
			}
			StartupPolicy  struct{ StartupPolicyOrder string }
			ReplicatedJobs []struct {
				Name     string
				Template struct {
					Spec struct {
						BackoffLimit, Completions, ActiveDeadlineSeconds int
						Template                                         struct {
							Spec struct {
								Hostname   string
								Containers []struct {
									Command []string
									Env     []struct{ Name, Value string }
								}
							}
						}
					}
				}
			}
		}
	}
	for _, o := range res.Objects {
		kinds = append(kinds, o.Kind)
		if o.Kind == "JobSet" {
			require.NoError(t, json.Unmarshal(o.JSON(), &set))
		}
	}
	assert.Equal(t, []string{"ConfigMap", "JobSet"}, kinds, "one JobSet; its Service is the controller's; no presence Service")
	s := set.Spec
	assert.Equal(t, "r", s.Network.Subdomain)
	assert.Equal(t, "All", s.SuccessPolicy.Operator)
	assert.Equal(t, []string{"submitter"}, s.SuccessPolicy.TargetReplicatedJobs, "the lead's success ends the set")
	assert.Equal(t, 2, s.FailurePolicy.MaxRestarts, "backoffLimit: the set's restarts")
	assert.Equal(t, "BlockingRecreate", s.FailurePolicy.RestartStrategy, "no pod of the last attempt beside the next one's, under the same name")
	require.Len(t, s.FailurePolicy.Rules, 1)
	assert.Equal(t, "FailJobSet", s.FailurePolicy.Rules[0].Action)
	assert.Equal(t, []string{"DeadlineExceeded"}, s.FailurePolicy.Rules[0].OnJobFailureReasons, "past its deadline, the set fails for good")
	assert.Equal(t, "InOrder", s.StartupPolicy.StartupPolicyOrder)
	var order []string
	for _, rj := range s.ReplicatedJobs {
		order = append(order, rj.Name)
		js := rj.Template.Spec
		assert.Zero(t, js.BackoffLimit, "%s: the Jobs never retry; the set does", rj.Name)
		assert.Equal(t, 600, js.ActiveDeadlineSeconds, rj.Name)
		assert.Empty(t, js.Template.Spec.Hostname, "%s: the Job controller names an Indexed Job's pods", rj.Name)
		c := js.Template.Spec.Containers[0]
		for _, arg := range c.Command {
			assert.NotContains(t, []string{"--watch", "--hear-end", "--tell-end", "--group", "--group-lead"}, arg, "%s: %v", rj.Name, c.Command)
		}
		assert.Equal(t, []string{"sh", "/etc/trainsonnet/runtime.sh", "run", "--"}, c.Command[:4],
			"%s: nothing left to wait for, the runtime still hands SIGTERM on (%v)", rj.Name, c.Command)
		for _, e := range c.Env {
			assert.NotContains(t, []string{"TS_END_TOKEN", "TS_FOLLOWERS", "TS_END_ON_FAILURE"}, e.Name, rj.Name)
		}
	}
	assert.Equal(t, []string{"worker", "submitter", "head"}, order, "the head starts after the workers")

	// a command that still waits keeps the runtime, without the relation
	res, err = renderRay(t, `[config] + roles.objects('ray', p, [rs[0], rs[1] + {command: runtime.run(['ray'], waits=['r-head-0-0.r:6379'], watch=watch(p), hearEnd=end)}, rs[2]])`, "jobset", true)
	require.NoError(t, err)
	for _, o := range res.Objects {
		if o.Kind == "JobSet" {
			assert.Contains(t, string(o.JSON()), `["sh","/etc/trainsonnet/runtime.sh","run","--wait-tcp","r-head-0-0.r:6379","--","ray"]`)
		}
	}

	for name, c := range map[string]struct{ render, want string }{
		"a Deployment": {`[config] + roles.objects('ray', p, [rs[0] + {kind: 'Deployment'}, rs[1], rs[2]])`,
			"roles.objects: role head is a Deployment, and a JobSet (jobset) holds Jobs"},
		"after no role": {`[config] + roles.objects('ray', p, [rs[0] + {after: 'nobody'}, rs[1], rs[2]])`,
			"roles.objects: role head starts after nobody, which is not another role of this job (head, worker, submitter)"},
		"after itself": {`[config] + roles.objects('ray', p, [rs[0] + {after: 'head'}, rs[1], rs[2]])`,
			"roles.objects: role head starts after head, which is not another role of this job"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := renderRay(t, c.render, "jobset", true)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.NotContains(t, err.Error(), "\n", "one line")
		})
	}
}
