// A prototype of a user's own, found with -J: flags, validation, describe and
// schema come from its declarations, with no Go.
local common = import 'common.libsonnet';
local ts = import 'trainsonnet.libsonnet';

ts.prototype({
  name: 'hello',
  summary: 'A Deployment that says hello',
  params: common.params('hello', 'busybox:1.36') + {
    replicas: ts.params.int('Pods of the Deployment.', default=1, min=1, max=10),
    greeting: ts.params.string('What to say.', default='hello', format='nonEmpty'),
  },
  validate(p):: [ts.check(p.replicas != 7, 'replicas', 'must not be 7 (an example of a rule of the prototype)')],
  render(p):: [{
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: common.metadata('hello', p, p.name),
    spec: {
      replicas: p.replicas,
      selector: { matchLabels: common.selector('hello', p) },
      template: common.podTemplate('hello', p, null, common.podSpec(p) + {
        containers: [{ name: 'hello', image: p.image, command: ['sh', '-c', 'echo ' + p.greeting + '; sleep 3600'] }],
      }),
    },
  }],
})
