// The lifetime of a batch job: the parameters and fields of every Job a
// prototype runs. Prototypes made only of long-lived workloads (a
// TensorBoard Deployment) leave them out: they would mean nothing there.
//
// A job's lead role is the one whose end ends the job: the launcher (MPI),
// the driver (Horovod), the chief or the workers (TensorFlow). Retries apply
// to it; the other roles' Jobs never retry, they wait for the next attempt.

local params = import 'params.libsonnet';

// Disruptions (preemption, node drain) do not count as failures.
local ignoreDisruptions = {
  rules: [{ action: 'Ignore', onPodConditions: [{ type: 'DisruptionTarget', status: 'True' }] }],
};

{
  // params(lead): the lifetime parameters; lead names the role whose pod
  // is retried ("the launcher").
  params(lead):: params.common({
    ttlSecondsAfterFinished: params.seconds('Delete the finished Jobs (and their pods) this long after they end. Unset, they stay until deleted.', min=0),
    activeDeadlineSeconds: params.seconds('Fail the job, and stop all its pods, if it runs longer than this.', min=1),
    backoffLimit: params.int('Retries of ' + lead + '\'s pod before the job fails. With retries the other pods wait for the next attempt.', default=0, min=0, max=100),
  }),

  // spec(p, backoffLimit): the lifetime fields of a batch/v1 Job spec
  // (backoffLimit null: left out, the API's default). Disruptions
  // (preemption, node drain) do not count as failures; the pod is simply
  // replaced.
  spec(p, backoffLimit):: {
    [if backoffLimit != null then 'backoffLimit']: backoffLimit,
    [if p.activeDeadlineSeconds != null then 'activeDeadlineSeconds']: p.activeDeadlineSeconds,
    [if p.ttlSecondsAfterFinished != null then 'ttlSecondsAfterFinished']: p.ttlSecondsAfterFinished,
    podFailurePolicy: $.podFailurePolicy(),
  },

  // podFailurePolicy(rules): the pod failure policy of spec, with rules of
  // the prototype's own after the one that ignores disruptions (FailIndex
  // on an exit code, with backoffLimitPerIndex; FailJob; Count).
  podFailurePolicy(rules=[]):: { rules: ignoreDisruptions.rules + rules },
}
