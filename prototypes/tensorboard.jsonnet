// tensorboard: TensorBoard for a training job's logs, a Deployment and a
// Service. Replaces the tensorboard chart of the distributed TensorFlow
// charts (seed 002) and Kubeflow's tensorboard ksonnet prototype.

local batch = import 'batch.libsonnet';
local common = import 'common.libsonnet';
local roles = import 'roles.libsonnet';
local storage = import 'storage.libsonnet';
local tf = import 'tf.libsonnet';
local ts = import 'trainsonnet.libsonnet';

local params = ts.params;
local proto = 'tensorboard';
local component = 'tensorboard';

// TensorFlow's own image: it has tensorboard, and TensorFlow's file systems
// read local and gs:// logdirs. The charts ran it untagged (:latest).
local defaultImage = 'tensorflow/tensorflow:2.18.0';

local roleParams = roles.params(
  'TensorBoard',
  exec='Command TensorBoard\'s container runs with sh -c instead of tensorboard --logdir=<logDir> --port=<targetPort> --bind_all (a wrapper that installs a plugin first, say). It must serve HTTP on targetPort; $LOG_DIR holds logDir.',
);

local params_ = common.params('train') + batch.formParams + storage.params(['logDir'], tfCharts=true) + roleParams + {
  runAsUser+: {
    default: 1000,
    doc: 'User id TensorBoard runs as: 1000 by default, so it runs without root (Pod Security restricted); 0 runs it as root. The user need not exist in the image.',
  },
  runAsGroup+: { default: 1000 },
  networkPolicy+: { doc: 'Create a NetworkPolicy that admits TensorBoard\'s port only from uiFrom (by default the namespace, or anywhere with a LoadBalancer or NodePort). Turn off only if your cluster manages policies elsewhere.' },
  tensorboardImage: params.string(
    'Image with TensorBoard. The default is TensorFlow\'s own image, pinned (the chart ran it untagged, so :latest; Kubeflow pinned 1.8.0), whose TensorFlow reads local and gs:// logdirs. For s3:// use an image with tensorboard and boto3 but without TensorFlow: TensorFlow 2.6 and later read S3 only through tensorflow-io, which TensorBoard does not load, while TensorBoard alone reads S3 with boto3.',
    default=defaultImage, format='image', replaces='defaultTbImage'
  ),
  imagePullPolicy: params.enum('Image pull policy. Unset: Always for an image tagged :latest or not tagged, else IfNotPresent, as Kubernetes picks it (written out, so the manifest says it).', ['Always', 'IfNotPresent', 'Never']),
  gpuResource: params.string('Extended resource that counts GPUs.', default='nvidia.com/gpu', format='extendedResourceName'),
  targetPort: params.int('Port TensorBoard listens on in its pod (the chart\'s tensorboardport, Kubeflow\'s targetPort): 1024 or more, since TensorBoard runs without root; clients use servicePort.', default=6006, min=1024, max=65535, replaces='tensorboardport'),
  servicePort: params.int('Port of the Service, forwarded to targetPort: 80, as the chart had (Kubeflow\'s was 9000).', default=80, min=1, max=65535),
  serviceType: params.enum('Type of the Service: ClusterIP (reach it with kubectl port-forward or an Ingress), LoadBalancer (what the chart made), or NodePort.', ['ClusterIP', 'LoadBalancer', 'NodePort'], default='ClusterIP'),
  uiFrom: params.object(
    'Who the NetworkPolicy admits to TensorBoard\'s port, as NetworkPolicy peers: [{namespaceSelector: {}}] is every pod of the cluster, [{ipBlock: {cidr: 203.0.113.0/24}}] a range of addresses. Empty (the default): every pod of the namespace with serviceType ClusterIP; any source with LoadBalancer or NodePort, whose traffic comes from outside the cluster.',
    'networking/v1.NetworkPolicyPeer', list=true
  ),
  s3: params.group('Credentials for an s3:// logDir (Kubeflow\'s s3* parameters). Unset, the AWS SDK finds them itself (IRSA, instance profile).', {
    secret: params.string('Secret with the access key id and secret access key.', format='dns1123Subdomain', replaces='s3SecretName'),
    accessKeyIdKey: params.string('Key of the access key id in the Secret (AWS_ACCESS_KEY_ID).', default='AWS_ACCESS_KEY_ID', format='envName', replaces='s3SecretAccesskeyidKeyName'),
    secretAccessKeyKey: params.string('Key of the secret access key in the Secret (AWS_SECRET_ACCESS_KEY).', default='AWS_SECRET_ACCESS_KEY', format='envName', replaces='s3SecretSecretaccesskeyKeyName'),
    endpoint: params.string('Endpoint URL of an S3-compatible store (MinIO, Ceph) as S3_ENDPOINT. Unset: AWS.', format='nonEmpty', replaces='s3Endpoint'),
    region: params.string('Region of the bucket, as AWS_REGION and AWS_DEFAULT_REGION.', format='nonEmpty', replaces='s3AwsRegion'),
  }),
  gcs: params.group('Credentials for a gs:// logDir. Unset: the pod\'s own (Workload Identity).', {
    secret: params.string('Secret holding a service account key file, mounted read-only and named by GOOGLE_APPLICATION_CREDENTIALS.', format='dns1123Subdomain', replaces='gcpCredentialSecretName'),
    key: params.string('Key of the key file in the Secret.', default='key.json', format='dns1123Subdomain'),
  }),
};

local gcsDir = '/var/run/secrets/trainsonnet/gcs';
local httpPort = 'http';

local logDir(p) = storage.dir(p, 'logDir');
local scheme(p) = local d = logDir(p); if std.startsWith(d, 's3://') then 's3' else if std.startsWith(d, 'gs://') then 'gs' else 'local';

// The variables trainsonnet sets in the container.
local ownEnv(p) =
  [{ name: 'LOG_DIR', value: logDir(p) }]
  + (if scheme(p) == 's3' && p.s3.secret != null then [
       { name: 'AWS_ACCESS_KEY_ID', valueFrom: { secretKeyRef: { name: p.s3.secret, key: p.s3.accessKeyIdKey } } },
       { name: 'AWS_SECRET_ACCESS_KEY', valueFrom: { secretKeyRef: { name: p.s3.secret, key: p.s3.secretAccessKeyKey } } },
     ] else [])
  + (if scheme(p) == 's3' && p.s3.endpoint != null then [{ name: 'S3_ENDPOINT', value: p.s3.endpoint }] else [])
  + (if scheme(p) == 's3' && p.s3.region != null then [{ name: 'AWS_REGION', value: p.s3.region }, { name: 'AWS_DEFAULT_REGION', value: p.s3.region }] else [])
  + (if scheme(p) == 'gs' && p.gcs.secret != null then [{ name: 'GOOGLE_APPLICATION_CREDENTIALS', value: gcsDir + '/' + p.gcs.key }] else []);

// The key file is readable by the pod's group (0440) when it has one, else
// by everyone in the pod (0444): TensorBoard is not root.
local gcsVolumes(p) =
  local mode = if p.fsGroup != null || p.runAsGroup != null then 288 else 292;
  if scheme(p) == 'gs' && p.gcs.secret != null then [{ name: 'trainsonnet-gcs', secret: { secretName: p.gcs.secret, defaultMode: mode } }] else [];
local gcsMounts(p) = if scheme(p) == 'gs' && p.gcs.secret != null then [{ name: 'trainsonnet-gcs', mountPath: gcsDir, readOnly: true }] else [];

local role(p) =
  local store = storage.pod(p, component, [logDir(p)], readOnly=true);
  {
    name: component,
    kind: 'Deployment',
    image: p.tensorboardImage,
    imagePullPolicy: p.imagePullPolicy,
    command: if p.exec != null then ['sh', '-c', p.exec]
    else ['tensorboard', '--logdir=' + logDir(p), '--port=' + p.targetPort, '--bind_all'],
    env: ownEnv(p) + common.env(p.env),
    ports: [{ name: httpPort, port: p.targetPort }],
    readinessProbe: { httpGet: { path: '/', port: httpPort }, periodSeconds: 10, failureThreshold: 3 },
    resources: roles.resources(cpu=p.cpu, memory=p.memory, gpu=p.gpu, gpuResource=p.gpuResource),
    nodeSelector: p.nodeSelector,
    tolerations: p.tolerations,
    volumes: store.volumes + gcsVolumes(p),
    mounts: store.mounts + gcsMounts(p),
  };

local service(p) = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: common.metadata(proto, p, p.name + '-' + component, component),
  spec: {
    type: p.serviceType,
    selector: common.selector(proto, p, component),
    ports: [{ name: httpPort, port: p.servicePort, targetPort: httpPort, protocol: 'TCP' }],
  },
};

// uiRule admits TensorBoard's port from uiFrom, or by default from the
// namespace (ClusterIP) or from anywhere (a LoadBalancer or NodePort).
local uiRule(p) = common.uiRule([p.targetPort], p.uiFrom, p.serviceType);

local exposed(p) = p.serviceType != 'ClusterIP';

ts.prototype({
  name: proto,
  summary: 'TensorBoard for a training job\'s logs: a Deployment and a Service (replaces the distributed TensorFlow charts\' tensorboard chart)',
  replaces: 'the tensorboard chart of the distributed TensorFlow charts (CatalystCode/autonomous-vehicle-control-development, 2017) and Kubeflow\'s tensorboard ksonnet prototype',
  // Its values files' spellings ("" for unset, quoted numbers, 2GB, {}), taken with a warning.
  spellings: ts.params.chartSpellings,
  description: |||
    A Deployment running `tensorboard --logdir=<logDir> --port=<targetPort> --bind_all` and a
    Service <name>-tensorboard, port servicePort (80, as the chart had) to targetPort (6006):
    ClusterIP by default (kubectl port-forward svc/<name>-tensorboard 8080:80), LoadBalancer
    (what the chart made) or NodePort on request. TensorBoard runs as user 1000, not root,
    with an HTTP readiness probe.

    logDir is read from the shared storage, mounted read-only (storage.*: an existing claim,
    NFS, or an Azure Files share through the CSI driver), or from an s3:// or gs:// URI with
    credentials from a Secret (s3.*, gcs.*). The charts' values.override.yaml works as a
    params file (-f) here, as for eval and tf-distributed: storage.sharename,
    storage.accountbase64 and storage.keybase64 are storage.azure.*, logdir is logDir,
    tensorboardport is targetPort, and the keys only the other two use are ignored with a
    warning. The names of Kubeflow's prototype (logDir, targetPort, servicePort,
    serviceType, defaultTbImage, s3SecretName, ...) work too.

    TensorBoard has no login: the NetworkPolicy admits its port from the namespace by
    default (uiFrom says from where else), and from anywhere with a LoadBalancer or NodePort,
    whose traffic comes from outside the cluster; trainsonnet warns when it is exposed.
    Objects are named after name, so several TensorBoards share a namespace (the chart's
    were all called tensorboard).
  |||,

  params: params_,

  removed: tf.removed(proto, params_, {
    s3Enabled: 'an s3:// logDir is enough',
    s3UseHttps: 'set env S3_USE_HTTPS=0 for plain HTTP (TensorFlow\'s S3 file system reads it)',
    s3VerifySsl: 'set env S3_VERIFY_SSL=0 to skip certificate checks (TensorFlow\'s S3 file system reads it)',
    efsEnabled: 'set storage.claim.name to the claim of the EFS volume',
    efsPvcName: 'now storage.claim.name (with storage.mountPath for efsMountPath)',
    efsVolumeName: 'the volume is named by trainsonnet',
    efsMountPath: 'now storage.mountPath',
  }),

  // The chart's values.yaml, or the values.override.yaml the three charts
  // shared, in use.
  chart: {
    name: 'the tensorboard chart',
    keys: tf.chartKeys,
    differs: {
      serviceType: 'ClusterIP here: the tensorboard chart\'s Service was a LoadBalancer, open to anyone, and TensorBoard has no login. Reach it with kubectl port-forward svc/<name>-tensorboard 6006:80, or set serviceType: LoadBalancer (--service-type LoadBalancer) with uiFrom to expose it again',
    },
    notes: [
      'TensorBoard runs with --port and --bind_all, which need TensorBoard 2.0 or later (the default tensorflow/tensorflow:2.18.0 has it; the chart ran tensorflow/tensorflow untagged): with an older tensorboardImage, set exec',
    ],
  },

  validate(p):: storage.validate(p, ['logDir']) + [
    roles.nameFits(p, [role(p)]),
    ts.check(!p.jobset, 'jobset',
             'tensorboard is a long-lived server (a Deployment), and a JobSet holds Jobs that end: render the training job with jobset, and TensorBoard beside it without'),
    ts.check(!(scheme(p) == 's3' && p.exec == null && p.tensorboardImage == defaultImage), 'logDir',
             'an s3:// logDir needs another tensorboardImage: TensorFlow 2.6 and later (this default image) read S3 only through tensorflow-io, which TensorBoard does not load; use an image with tensorboard and boto3 but without TensorFlow, where TensorBoard reads S3 itself'),
  ],

  warnings(p):: storage.warnings(p, component, [logDir(p)]) + [
    if exposed(p) then
      'serviceType ' + p.serviceType + ': TensorBoard has no login, so whoever reaches '
      + (if p.serviceType == 'LoadBalancer' then 'the load balancer' else 'a node\'s port') + ' sees every run in logDir'
      + (if p.networkPolicy && p.uiFrom == [] then '; narrow who may with uiFrom (an ipBlock), or put it behind an authenticating Ingress' else ''),
    if p.uiFrom != [] && !p.networkPolicy then 'uiFrom is not used: networkPolicy is off',
    if p.s3.secret != null && scheme(p) != 's3' then 's3.secret is not used: logDir is not an s3:// URI',
    if p.gcs.secret != null && scheme(p) != 'gs' then 'gcs.secret is not used: logDir is not a gs:// URI',
    roles.shWarning('exec', p.exec),
  ],

  render(p):: [
    common.networkPolicy(proto, p, [uiRule(p)], p.name + '-' + component),
    storage.secret(proto, p, component),
    service(p),
  ] + roles.objects(proto, p, [role(p)]),
})
