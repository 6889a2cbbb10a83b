# shellcheck shell=bash disable=SC2034
# Pinned versions of the real control plane used by the e2e tests.
# Sourced by every script in test/cluster/ (and usable by other harnesses).
# Changing a version here changes the cache directory, so the next build.sh
# rebuilds exactly what changed.

# Kubernetes: k8s.io/kubernetes and its staging modules (k8s.io/api, ...).
TRAINSONNET_K8S_VERSION=v1.34.3
TRAINSONNET_K8S_STAGING_VERSION=v0.34.3
# etcd server, built from go.etcd.io/etcd/server/v3.
TRAINSONNET_ETCD_VERSION=v3.6.16
# kwok (fake kubelets); v0.7.0 is the last release built with client-go 0.33,
# v0.8.0 needs client-go 0.36.
TRAINSONNET_KWOK_VERSION=v0.7.0
# Kueue (queues and gang admission of the e2e suites' jobs): a host process
# with its CRDs, RBAC and webhooks from the same module (build.sh kueue).
# v0.17.0 builds with `go install` (no replace directives) and supports
# Kubernetes 1.29 and newer.
TRAINSONNET_KUEUE_VERSION=v0.17.0
# JobSet (one object per job: the form of every prototype that --jobset
# renders): a host process with its CRD, RBAC and webhooks from the same
# module (build.sh jobset). v0.12.0 is go 1.26.0, and what Kueue v0.19.2
# and the Kubeflow Trainer v2.3.0 are built on.
TRAINSONNET_JOBSET_VERSION=v0.12.0
# The Kubeflow operators whose output test/operators records as the
# reference of the migration tests (build.sh operators; not part of `all`:
# CI compares with the committed recordings and never builds them).
TRAINSONNET_TRAINING_OPERATOR_VERSION=v1.9.3
TRAINSONNET_MPI_OPERATOR_VERSION=v0.8.0
# The Kubeflow Trainer v2 (TrainJobs on ClusterTrainingRuntimes, run as
# JobSets): v2.3.0 is go 1.26.0 on JobSet v0.12.0, the JobSet above; its
# stock runtimes and YAML examples come from the same module.
TRAINSONNET_TRAINER_VERSION=v2.3.0
