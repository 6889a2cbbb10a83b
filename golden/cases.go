// Package golden pins every byte trainsonnet prints for a set of cases:
// rendered manifests (stdout), warnings (stderr), kustomize bases, and the
// errors of bad input. Refresh with `go test ./... -update` and review the
// diff like code. The cases are exported so that the end-to-end suite under
// test/ applies exactly the same manifests to a real API server.
package golden

// A Case is one trainsonnet invocation and the golden files it must match.
type Case struct {
	Name string   // golden file name, without extension
	Args []string // after "trainsonnet"
}

// Renders are cases that succeed; their output goes to
// <prototype>/<name>.yaml (or .json), stderr to <name>.stderr when not empty.
// The e2e suite applies every one of them to a real API server.
var Renders = map[string][]Case{
	"openmpi": {
		{Name: "defaults", Args: []string{"gen", "openmpi"}},
		{Name: "gpu-node-selector-resources", Args: []string{"gen", "openmpi", "--name", "bench", "--workers", "8",
			"--gpu", "2", "--cpu", "8", "--memory", "32Gi", "--node-selector", "cloud.google.com/gke-accelerator=nvidia-tesla-t4",
			"--custom-resources", "rdma/hca_shared_devices_a=1,hugepages-2Mi=1Gi",
			"--tolerations", `[{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}]`,
			"--launcher-cpu", "1", "--launcher-memory", "2Gi"}},
		{Name: "host-network", Args: []string{"gen", "openmpi", "--name", "hostnet", "--workers", "3", "--use-host-network", "--ssh-port", "2222"}},
		{Name: "existing-ssh-secret", Args: []string{"gen", "openmpi", "--name", "keyed", "--ssh-secret", "team-mpi-key"}},
		{Name: "s3-staging", Args: []string{"gen", "openmpi", "--name", "staged", "--workers", "2", "--s3-secret", "aws-creds",
			"--s3-download-from", "s3://datasets/imagenet", "--s3-download-to", "/trainsonnet/data/imagenet",
			"--s3-upload-from", "/trainsonnet/data/out", "--s3-upload-to", "s3://results/runs", "--s3-endpoint", "https://minio.example.com"}},
		{Name: "non-root", Args: []string{"gen", "openmpi", "--name", "rootless", "--workers", "2", "--run-as-user", "1000",
			"--run-as-group", "1000", "--ssh-secret", "rootless-ssh", "--exec", "mpirun -np 2 hostname"}},
		{Name: "no-network-policy", Args: []string{"gen", "openmpi", "--name", "open", "--workers", "2", "--network-policy=false", "--ssh-secret", "open-ssh"}},
		{Name: "json", Args: []string{"gen", "openmpi", "--name", "listed", "--workers", "2", "--ssh-secret", "listed-ssh", "-o", "json"}},
		{Name: "ksonnet-spellings", Args: []string{"gen", "openmpi", "--name", "ks", "--image", "registry.example.com/mpi:1.0",
			"--secret", "ks-ssh", "--workers", "2", "--gpu", "1", "--initTimeout", "600", "--nodeSelector", "accelerator=nvidia-tesla-k80",
			"--imagePullPolicy", "Always", "--schedulerName", "volcano", "--exec", "mpirun -np 2 python /opt/train.py",
			"--s3Secret", "aws", "--downloadDataFrom", "s3://bucket/in", "--downloadDataTo", "/trainsonnet/data/in"}},
		{Name: "params-file", Args: []string{"gen", "openmpi", "-f", "testdata/openmpi-params.yaml", "--set", "workers=3", "--set", "mca.btl_tcp_if_include=eth0"}},
		{Name: "kubeflow-names-in-params-file", Args: []string{"gen", "openmpi", "-f", "testdata/openmpi-kubeflow-names.yaml"}},
		{Name: "lifetime-and-security", Args: []string{"gen", "openmpi", "--name", "bounded", "--workers", "2", "--ssh-secret", "b",
			"--ttl-seconds-after-finished", "1h", "--active-deadline-seconds", "2h", "--backoff-limit", "2",
			"--service-account-name", "trainer", "--priority-class-name", "high", "--image-pull-secrets", "regcred,mirror",
			"--labels", "team=ml,cost-center=42", "--annotations", "example.com/owner=ml-platform",
			"--volumes", `[{"name":"datasets","persistentVolumeClaim":{"claimName":"imagenet","readOnly":true}}]`,
			"--volume-mounts", `[{"name":"datasets","mountPath":"/datasets","readOnly":true}]`,
			"--env", "NCCL_DEBUG=INFO,OMP_NUM_THREADS=4", "--launcher-env", "HOROVOD_TIMELINE=/trainsonnet/data/timeline.json",
			"--wait-for-gpu-driver", "--gpu", "1", "--slots", "1"}},
	},
}

func init() {
	Renders["horovod"] = []Case{
		{Name: "defaults", Args: []string{"gen", "horovod"}},
		// The two examples of the Helm chart's README, as their values files.
		{Name: "chart-example-gpu", Args: []string{"gen", "horovod", "--name", "mnist", "-f", "testdata/horovod-chart-gpu.yaml"}},
		{Name: "chart-example-host-network", Args: []string{"gen", "horovod", "--name", "mnist", "-f", "testdata/horovod-chart-host-network.yaml"}},
		{Name: "gpus-node-selector", Args: []string{"gen", "horovod", "--name", "bench", "--worker-number", "4",
			"--resources", `{"limits":{"nvidia.com/gpu":4,"memory":"96Gi"},"requests":{"cpu":"16"}}`,
			"--driver-resources", `{"limits":{"nvidia.com/gpu":1}}`,
			"--worker-node-selector", "cloud.google.com/gke-accelerator=nvidia-tesla-a100",
			"--worker-tolerations", `[{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}]`,
			"--driver-args", "mpirun -np 17 --bind-to none python train.py --epochs=90"}},
		{Name: "existing-ssh-secret", Args: []string{"gen", "horovod", "--name", "keyed", "--ssh-secret", "team-ssh", "--worker-number", "2"}},
		{Name: "per-role-env", Args: []string{"gen", "horovod", "--name", "envs", "--worker-number", "2", "--ssh-secret", "s",
			"--env", "NCCL_DEBUG=INFO", "--worker-env", "ROLE=worker", "--driver-env", "ROLE=driver,HOROVOD_TIMELINE=/tmp/timeline.json"}},
		{Name: "privileged-host-pid", Args: []string{"gen", "horovod", "--name", "priv", "--worker-number", "2", "--ssh-secret", "s",
			"--worker-privileged", "--use-host-pid"}},
		{Name: "master-flags", Args: []string{"gen", "horovod", "--name", "old", "--ssh-secret", "s", "--worker-number", "2",
			"--set", "master.image.tag=0.27.0", "--master.args", "mpirun -np 3 hostname", "--master.args", "&& echo done"}},
	}
	Bases["horovod"] = []Case{
		{Name: "kustomize-base", Args: []string{"gen", "horovod", "--name", "train", "--worker-number", "2", "--ssh-secret", "train-ssh"}},
	}
	Errors = append(Errors,
		Case{Name: "horovod-host-network-port-22", Args: []string{"gen", "horovod", "--use-host-network", "--ssh-port", "22"}},
		Case{Name: "horovod-ordered-ready", Args: []string{"gen", "horovod", "--worker-pod-management-policy", "OrderedReady"}},
		Case{Name: "horovod-bad-image-tag", Args: []string{"gen", "horovod", "--worker-image-tag", "1.0:latest"}},
		Case{Name: "horovod-repository-with-tag", Args: []string{"gen", "horovod", "--worker-image-repository", "horovod/horovod:0.28.1"}},
		Case{Name: "horovod-chart-mistakes", Args: []string{"gen", "horovod", "-f", "testdata/horovod-bad-values.yaml"}},
		Case{Name: "horovod-resources-typo", Args: []string{"gen", "horovod", "--resources", `{"limit":{"nvidia.com/gpu":1}}`}},
	)
}

// Bases are rendered with --output-dir and pinned as directories.
var Bases = map[string][]Case{
	"openmpi": {
		{Name: "kustomize-base", Args: []string{"gen", "openmpi", "--name", "train", "--workers", "2", "--ssh-secret", "train-ssh"}},
	},
}

// Outputs are the other commands whose output is pinned, in cli/<name>.txt.
var Outputs = []Case{
	{Name: "list", Args: []string{"list"}},
	{Name: "list-json", Args: []string{"list", "-o", "json"}},
	{Name: "describe-openmpi", Args: []string{"describe", "openmpi"}},
	{Name: "describe-openmpi-json", Args: []string{"describe", "openmpi", "-o", "json"}},
	{Name: "schema-openmpi", Args: []string{"schema", "openmpi"}},
	{Name: "gen-openmpi-help", Args: []string{"gen", "openmpi", "--help"}},
	{Name: "describe-horovod", Args: []string{"describe", "horovod"}},
	{Name: "schema-horovod", Args: []string{"schema", "horovod"}},
	{Name: "gen-help", Args: []string{"gen", "--help"}},
}

// Errors are cases that must fail: exit code and stderr are pinned in
// errors/<name>.txt, and stdout must stay empty.
var Errors = []Case{
	{Name: "bad-quantity", Args: []string{"gen", "openmpi", "--memory", "4GB"}},
	{Name: "negative-workers", Args: []string{"gen", "openmpi", "--workers", "-1"}},
	{Name: "unknown-flag", Args: []string{"gen", "openmpi", "--workerz", "3"}},
	{Name: "unknown-key-in-params-file", Args: []string{"gen", "openmpi", "-f", "testdata/unknown-key.yaml"}},
	{Name: "alias-and-types-in-params-file", Args: []string{"gen", "openmpi", "-f", "testdata/alias-key.yaml"}},
	{Name: "bad-name", Args: []string{"gen", "openmpi", "--name", "Bad_Name"}},
	{Name: "bad-label", Args: []string{"gen", "openmpi", "--labels", "team=ml/platform"}},
	{Name: "bad-enum", Args: []string{"gen", "openmpi", "--image-pull-policy", "Sometimes"}},
	{Name: "host-network-port-22", Args: []string{"gen", "openmpi", "--use-host-network", "--ssh-port", "22"}},
	{Name: "bad-bool", Args: []string{"gen", "openmpi", "--network-policy=maybe"}},
	{Name: "bad-duration", Args: []string{"gen", "openmpi", "--init-timeout", "5 minutes"}},
	{Name: "unknown-prototype", Args: []string{"gen", "opnempi"}},
	{Name: "bad-map", Args: []string{"gen", "openmpi", "--node-selector", "gpu"}},
	{Name: "bad-volume-field", Args: []string{"gen", "openmpi", "--volumes", `[{"name":"data","emptyDirr":{}}]`}},
	{Name: "s3-download-without-target", Args: []string{"gen", "openmpi", "--s3-download-from", "s3://bucket/data"}},
	{Name: "name-too-long-for-workers", Args: []string{"gen", "openmpi", "--name", "a-rather-long-job-name-for-a-big-distributed-training", "--workers", "10000"}},
	{Name: "params-file-not-yaml", Args: []string{"gen", "openmpi", "-f", "testdata/not-yaml.yaml"}},
	{Name: "params-file-missing", Args: []string{"gen", "openmpi", "-f", "testdata/does-not-exist.yaml"}},
	{Name: "reserved-env", Args: []string{"gen", "openmpi", "--env", "TS_EXEC=rm -rf /"}},
	{Name: "set-without-equals", Args: []string{"gen", "openmpi", "--set", "workers"}},
	{Name: "set-unknown-key", Args: []string{"gen", "openmpi", "--set", "ssh.prot=2222"}},
	{Name: "two-spellings-of-one-flag", Args: []string{"gen", "openmpi", "--node-selector", "a=b", "--nodeSelector", "c=d"}},
	{Name: "bad-output-format", Args: []string{"gen", "openmpi", "-o", "xml"}},
	{Name: "extra-argument", Args: []string{"gen", "openmpi", "extra"}},
	{Name: "mount-of-unknown-volume", Args: []string{"gen", "openmpi", "--volume-mounts", `[{"name":"scratch","mountPath":"/scratch"}]`}},
	{Name: "bad-image", Args: []string{"gen", "openmpi", "--image", "Registry/MPI:1"}},
	{Name: "bad-env-name", Args: []string{"gen", "openmpi", "--env", "1BAD=x"}},
	{Name: "bad-secret-name", Args: []string{"gen", "openmpi", "--ssh-secret", "Not_A_Name"}},
	{Name: "many-problems-at-once", Args: []string{"gen", "openmpi", "--workers", "0", "--gpu", "-1", "--memory", "lots", "--ssh-port", "70000", "--namespace", "Team A"}},
	{Name: "no-prototype", Args: []string{"gen"}},
	{Name: "flag-before-prototype", Args: []string{"gen", "--workers", "2", "openmpi"}},
	{Name: "describe-unknown", Args: []string{"describe", "horovd"}},
	// Found by the e2e sweep: values the API server refuses, now refused here.
	{Name: "user-id-above-int32", Args: []string{"gen", "openmpi", "--run-as-user", "2147483648"}},
	{Name: "ttl-above-int32", Args: []string{"gen", "openmpi", "--ttl-seconds-after-finished", "2147483648"}},
	{Name: "fractional-memory", Args: []string{"gen", "openmpi", "--memory", "500m"}},
	{Name: "custom-resource-rules", Args: []string{"gen", "openmpi", "--custom-resources", "example.com/fpga=500m"}},
	{Name: "custom-resource-without-domain", Args: []string{"gen", "openmpi", "--custom-resources", "fpga=1"}},
	{Name: "hugepages-without-memory", Args: []string{"gen", "openmpi", "--custom-resources", "hugepages-2Mi=1Gi"}},
	{Name: "hugepages-not-whole-pages", Args: []string{"gen", "openmpi", "--memory", "1Gi", "--custom-resources", "hugepages-2Mi=3Mi"}},
	{Name: "gpu-resource-without-domain", Args: []string{"gen", "openmpi", "--gpu-resource", "gpu"}},
	{Name: "pull-secret-twice", Args: []string{"gen", "openmpi", "--image-pull-secrets", "regcred,regcred"}},
	{Name: "data-dir-on-own-mount", Args: []string{"gen", "openmpi", "--data-dir", "/etc/trainsonnet"}},
	{Name: "mount-path-twice", Args: []string{"gen", "openmpi", "--volumes", `[{"name":"a","emptyDir":{}}]`,
		"--volume-mounts", `[{"name":"a","mountPath":"/trainsonnet/data"}]`}},
	{Name: "env-sets-open-mpi", Args: []string{"gen", "openmpi", "--env", "OMPI_MCA_btl=tcp", "--launcher-env", "OMPI_ALLOW_RUN_AS_ROOT=0"}},
	{Name: "hostfile-over-a-configmap", Args: []string{"gen", "openmpi", "--name", "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwx", "--workers", "9000"}},
	{Name: "toleration-rules", Args: []string{"gen", "openmpi", "--tolerations", `[{"key":"a","operator":"Exists","value":"x"}]`}},
	{Name: "data-dir-at-root", Args: []string{"gen", "openmpi", "--data-dir", "/"}},
	{Name: "non-root-on-privileged-port", Args: []string{"gen", "openmpi", "--run-as-user", "1000", "--ssh-port", "22"}},
}

// The distributed TensorFlow charts' tensorboard and eval (seed 002, issue
// 9), and the storage they share: every case of both prototypes is here.
func init() {
	Renders["tensorboard"] = []Case{
		{Name: "defaults", Args: []string{"gen", "tensorboard"}},
		// The values.override.yaml the three charts shared, and every key of
		// the three charts in one file.
		{Name: "chart-values-override", Args: []string{"gen", "tensorboard", "--name", "cars", "-f", "testdata/tf-values-override.yaml"}},
		{Name: "all-charts-in-one-file", Args: []string{"gen", "tensorboard", "--name", "cars", "-f", "testdata/tf-all-charts.yaml"}},
		{Name: "claim", Args: []string{"gen", "tensorboard", "--name", "cars", "--storage-claim-name", "checkpoints",
			"--log-dir", "/storage/runs", "--cpu", "2", "--memory", "4Gi"}},
		{Name: "nfs", Args: []string{"gen", "tensorboard", "--name", "cars", "--storage-nfs-server", "nfs.example.com",
			"--storage-nfs-path", "/exports/ml", "--storage-mount-path", "/mnt/ml", "--log-dir", "/mnt/ml/cars"}},
		{Name: "azure-secret", Args: []string{"gen", "tensorboard", "--name", "cars", "--storage-azure-share-name", "share",
			"--storage-azure-secret", "azure-files"}},
		{Name: "load-balancer", Args: []string{"gen", "tensorboard", "--name", "cars", "--service-type", "LoadBalancer",
			"--storage-claim-name", "checkpoints"}},
		{Name: "node-port-from-a-range", Args: []string{"gen", "tensorboard", "--name", "cars", "--service-type", "NodePort",
			"--service-port", "9000", "--storage-claim-name", "checkpoints",
			"--ui-from", `[{"ipBlock":{"cidr":"203.0.113.0/24"}},{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"ingress"}}}]`}},
		{Name: "s3", Args: []string{"gen", "tensorboard", "--name", "cars", "--log-dir", "s3://runs/cars",
			"--tensorboard-image", "registry.example.com/tensorboard-boto3:2.18.0", "--s3-secret", "aws-creds",
			"--s3-endpoint", "https://minio.example.com", "--s3-region", "us-east-1"}},
		{Name: "gcs", Args: []string{"gen", "tensorboard", "--name", "cars", "--log-dir", "gs://runs/cars", "--gcs-secret", "gcp-sa"}},
		{Name: "kubeflow-names", Args: []string{"gen", "tensorboard", "--name", "cars", "--logDir", "gs://runs/cars",
			"--targetPort", "6007", "--servicePort", "9000", "--serviceType", "NodePort",
			"--defaultTbImage", "tensorflow/tensorflow:2.17.0", "--gcpCredentialSecretName", "gcp-sa"}},
		{Name: "resources-and-scheduling", Args: []string{"gen", "tensorboard", "--name", "cars", "--storage-claim-name", "checkpoints",
			"--cpu", "4", "--memory", "8Gi", "--gpu", "1", "--node-selector", "pool=tools",
			"--tolerations", `[{"key":"dedicated","operator":"Equal","value":"tools","effect":"NoSchedule"}]`,
			"--exec", `pip install --user tensorboard-plugin-profile && exec tensorboard --logdir="$LOG_DIR" --port=6006 --bind_all`}},
	}
	Renders["eval"] = []Case{
		{Name: "defaults", Args: []string{"gen", "eval"}},
		{Name: "chart-values-override", Args: []string{"gen", "eval", "--name", "cars", "-f", "testdata/tf-values-override.yaml"}},
		// The eval chart's own values, then the shared override, as
		// `helm install -f values.override.yaml` applied them.
		{Name: "chart-values", Args: []string{"gen", "eval", "--name", "cars", "-f", "testdata/eval-chart-values.yaml",
			"-f", "testdata/tf-values-override.yaml"}},
		{Name: "all-charts-in-one-file", Args: []string{"gen", "eval", "--name", "cars", "-f", "testdata/tf-all-charts.yaml"}},
		{Name: "claim", Args: []string{"gen", "eval", "--name", "cars", "--storage-claim-name", "checkpoints",
			"--image-repository", "registry.example.com/cars-eval", "--image-tag", "1.4"}},
		{Name: "nfs", Args: []string{"gen", "eval", "--name", "cars", "--storage-nfs-server", "10.0.0.4", "--storage-nfs-path", "/exports/ml",
			"--train-dir", "/storage/cars/train", "--eval-dir", "/storage/cars/eval", "--image-repository", "registry.example.com/cars-eval"}},
		{Name: "azure-secret", Args: []string{"gen", "eval", "--name", "cars", "--storage-azure-share-name", "share",
			"--storage-azure-secret", "azure-files", "--image-repository", "registry.example.com/cars-eval"}},
		// The charts' pasted credentials beside a Secret: the Secret wins,
		// and nothing secret is written.
		{Name: "secret-over-pasted-credentials", Args: []string{"gen", "eval", "--name", "cars", "-f", "testdata/tf-values-override.yaml",
			"--storage-azure-secret", "azure-files", "--image-repository", "registry.example.com/cars-eval"}},
		{Name: "gpu", Args: []string{"gen", "eval", "--name", "cars", "--storage-claim-name", "checkpoints", "--gpu", "1",
			"--cpu", "4", "--memory", "16Gi", "--node-selector", "cloud.google.com/gke-accelerator=nvidia-tesla-t4",
			"--tolerations", `[{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}]`,
			"--image-repository", "registry.example.com/cars-eval", "--args", "--data_dir=/data", "--args", "--batch_size=64"}},
		{Name: "exec-and-lifetime", Args: []string{"gen", "eval", "--name", "cars", "--storage-claim-name", "checkpoints",
			"--image-repository", "registry.example.com/cars-eval", "--image-tag", "1.4",
			"--exec", `python -m cars.eval --checkpoint_dir="$TRAIN_DIR" --eval_dir="$EVAL_DIR" --once`,
			"--active-deadline-seconds", "2h", "--ttl-seconds-after-finished", "24h", "--backoff-limit", "2"}},
	}
	Outputs = append(Outputs,
		Case{Name: "describe-tensorboard", Args: []string{"describe", "tensorboard"}},
		Case{Name: "schema-tensorboard", Args: []string{"schema", "tensorboard"}},
		Case{Name: "describe-eval", Args: []string{"describe", "eval"}},
		Case{Name: "schema-eval", Args: []string{"schema", "eval"}},
	)
	Errors = append(Errors,
		Case{Name: "tensorboard-two-stores", Args: []string{"gen", "tensorboard", "--storage-claim-name", "checkpoints", "--storage-nfs-server", "nfs.example.com"}},
		Case{Name: "tensorboard-share-without-credentials", Args: []string{"gen", "tensorboard", "--storage-azure-share-name", "share"}},
		Case{Name: "tensorboard-log-dir-off-the-storage", Args: []string{"gen", "tensorboard", "--storage-claim-name", "checkpoints", "--log-dir", "/data/logs"}},
		Case{Name: "tensorboard-relative-log-dir", Args: []string{"gen", "tensorboard", "--log-dir", "logs"}},
		Case{Name: "tensorboard-s3-with-the-default-image", Args: []string{"gen", "tensorboard", "--log-dir", "s3://runs/cars"}},
		Case{Name: "tensorboard-privileged-target-port", Args: []string{"gen", "tensorboard", "--target-port", "80"}},
		Case{Name: "tensorboard-bad-peer", Args: []string{"gen", "tensorboard", "--ui-from", `[{"ipBlock":{"cidr":"10.0.0.1/8"}}]`}},
		Case{Name: "tensorboard-reserved-env", Args: []string{"gen", "tensorboard", "--env", "LOG_DIR=/tmp"}},
		// The charts' values.override.yaml as shipped: its placeholders are
		// not the base64 the charts needed.
		Case{Name: "eval-chart-placeholders", Args: []string{"gen", "eval", "-f", "testdata/tf-values-placeholders.yaml"}},
		Case{Name: "eval-key-ends-in-newline", Args: []string{"gen", "eval", "--storage-azure-share-name", "share",
			"--storage-azure-account-base64", "YWNjb3VudG5hbWUK", "--storage-azure-key-base64", "YWNjb3VudGtleQ=="}},
		Case{Name: "eval-account-without-key", Args: []string{"gen", "eval", "--storage-azure-share-name", "share",
			"--storage-azure-account-base64", "YWNjb3VudG5hbWU="}},
		Case{Name: "eval-credentials-without-share", Args: []string{"gen", "eval", "--storage-azure-secret", "azure-files"}},
		Case{Name: "eval-bad-share-name", Args: []string{"gen", "eval", "--storage-azure-share-name", "my--share", "--storage-azure-secret", "azure-files"}},
		Case{Name: "eval-mount-over-the-storage", Args: []string{"gen", "eval", "--volumes", `[{"name":"data","emptyDir":{}}]`,
			"--volume-mounts", `[{"name":"data","mountPath":"/storage"}]`}},
		Case{Name: "eval-image-name-with-tag", Args: []string{"gen", "eval", "--image-name", "distrib-tensorflow-cars:worker-gpu"}},
		Case{Name: "eval-name-too-long", Args: []string{"gen", "eval", "--name", "a-rather-long-name-for-an-evaluation-of-a-training-run-abcdef"}},
	)
}
