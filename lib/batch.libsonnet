// batch: the lifetime of a batch job, one piece that every Job role takes.
//
// Needs:    nothing (plain p fields).
// Declares: batch.params(lead) — ttlSecondsAfterFinished,
//           activeDeadlineSeconds, backoffLimit (owned by batch.params)
//           and jobset (batch.formParams, which a prototype without Jobs
//           may declare alone, to refuse it in words of its own).
// Returns:  batch.spec(p, backoffLimit) the lifetime fields of a Job spec;
//           batch.podFailurePolicy(rules); batch.declared(p) whether p
//           has the lifetime parameters; batch.need(p, who) p, or (with
//           ts.checks) batch.missing(p, who), the error that says what to
//           add; batch.jobset(p) whether the job is one JobSet.
//
// roles.objects applies the lifetime to every Job (and Indexed Job) role
// by itself: the deadline and the TTL to each, p.backoffLimit to the lead
// role (lead: true), and as many replacements of a lost pod to the others
// (per index for an Indexed Job). A prototype with a Job role must
// declare batch.params, or roles.objects stops with an error naming it;
// prototypes made only of long-lived workloads (a TensorBoard Deployment)
// leave it out: it would mean nothing there.
//
// A job's lead role is the one whose end ends the job: the launcher (MPI),
// the driver (Horovod), the chief or the workers (TensorFlow). Its retries
// are the job's attempts; the other roles' Jobs wait for the next attempt,
// and replace a pod they lost, so that the next attempt finds them all.

local params = import 'params.libsonnet';
local ts = import 'trainsonnet.libsonnet';

// Disruptions (preemption, node drain) do not count as failures, nor do
// Kueue's evictions and preemptions of a queued job's pods (Kueue marks
// the pods of a pod group TerminationTarget before it deletes them).
local ignoreDisruptions = {
  rules: [
    { action: 'Ignore', onPodConditions: [{ type: 'DisruptionTarget', status: 'True' }] },
    { action: 'Ignore', onPodConditions: [{ type: 'TerminationTarget', status: 'True' }] },
  ],
};

local names = ['activeDeadlineSeconds', 'backoffLimit', 'ttlSecondsAfterFinished'];

// The job's form: its Jobs (the default: no controller but Kubernetes'),
// or one JobSet (jobset.x-k8s.io/v1alpha2) on a cluster that runs the
// JobSet controller (roles.objects makes either from the same roles).
local formParams = ts.declare('batch.formParams', params.common({
  jobset: params.bool('Make the job one JobSet (jobset.x-k8s.io/v1alpha2) instead of its Jobs, for a cluster that runs the JobSet controller: a replicated Job per role, one status (kubectl get jobset), the lead\'s success ends the set and JobSet stops the other roles, a failure restarts the whole set backoffLimit times, and --queue admits it by Kueue\'s JobSet integration. Pod names gain the replicated Job\'s index (<name>-<role>-0-<i>). Off: plain Jobs, no controller needed.'),
}));

{
  // formParams: jobset, the job's form (part of params).
  formParams:: formParams,

  // jobset(p): whether the job is one JobSet (p.jobset; false where the
  // prototype does not declare it).
  jobset(p):: ts.has(p, 'jobset') && p.jobset,

  // params(lead): the lifetime parameters; lead names the role whose pod
  // is retried ("the launcher").
  params(lead):: formParams + ts.declare('batch.params', params.common({
    ttlSecondsAfterFinished: params.seconds('Delete the finished Jobs (and their pods) this long after they end. Unset, they stay until deleted.', min=0),
    activeDeadlineSeconds: params.seconds('Fail the job, and stop all its pods, if it runs longer than this.', min=1),
    backoffLimit: params.int('Retries of ' + lead + '\'s pod before the job fails. With retries the other pods wait for the next attempt, and a lost one is replaced as often; evictions and preemptions are not counted.', default=0, min=0, max=100),
  })),

  // declared(p): whether p has the lifetime parameters.
  declared(p):: ts.has(p, 'backoffLimit') && ts.has(p, 'activeDeadlineSeconds') && ts.has(p, 'ttlSecondsAfterFinished'),

  // need(p, who): p, when it has the lifetime parameters (or ts.checks
  // is off); otherwise missing(p, who).
  need(p, who):: if !ts.checks || $.declared(p) then p else $.missing(p, who),

  // missing(p, who): the error of who ("roles: role worker is a Job")
  // used without the lifetime parameters: what to add.
  missing(p, who)::
    ts.fail(who + ', and a Job takes the Job lifetime parameters (' + std.join(', ', [n for n in names if !std.objectHas(p, n)])
            + '), which the prototype does not declare: add batch.params(\'<the lead role>\') to its params'),

  // spec(p, backoffLimit): the lifetime fields of a batch/v1 Job spec
  // (backoffLimit null: left out, the API's default). Disruptions
  // (preemption, node drain, Kueue's evictions) do not count as failures;
  // the pod is simply replaced.
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
