package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// Operator is a Kubeflow operator running as a host process against the
// harness's control plane: the reference that test/operators records and
// that make bench-start races (test/cluster/build.sh operators builds them).
type Operator struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// TrainingOperator describes a run of the Kubeflow training operator.
type TrainingOperator struct {
	Bin  string // its binary
	CRDs string // the CRDs to install (a YAML stream)
	Log  string // its log file ("": stderr)
	// Schemes it runs (pytorchjob, tfjob): CRDs holds theirs.
	Schemes []string
	// Args are more flags (--pytorch-init-container-image, ...).
	Args []string
}

// StartTrainingOperator installs the CRDs and what the operator's webhook
// certificate rotation needs to find (its namespace, Secret and webhook
// configuration; no webhook: the API server could not reach a host
// process by its Service's name, and validation is not what is tested),
// starts it, and puts the certificates it writes where its webhook server
// reads them, as its Deployment's volume would: it starts its controllers
// only then.
func (k *Kubectl) StartTrainingOperator(ctx context.Context, o TrainingOperator) (*Operator, error) {
	if _, err := k.Run(ctx, nil, "apply", "--server-side", "-f", o.CRDs); err != nil {
		return nil, err
	}
	if _, err := k.Run(ctx, nil, "wait", "--for=condition=Established", "--timeout=60s", "-f", o.CRDs); err != nil {
		return nil, err
	}
	extra := `apiVersion: v1
kind: Namespace
metadata: {name: kubeflow}
---
apiVersion: v1
kind: Secret
metadata: {name: training-operator-webhook-cert, namespace: kubeflow}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: validator.training-operator.kubeflow.org}
webhooks: []
`
	if _, err := k.Run(ctx, []byte(extra), "apply", "--server-side", "-f", "-"); err != nil {
		return nil, err
	}
	args := []string{"--metrics-bind-address=127.0.0.1:18090", "--health-probe-bind-address=127.0.0.1:18091", "--webhook-server-port=19446"}
	for _, s := range o.Schemes {
		args = append(args, "--enable-scheme="+s)
	}
	op, err := startOperator(k, o.Bin, o.Log, append(args, o.Args...))
	if err != nil {
		return nil, err
	}
	if err := k.mountWebhookCerts(ctx); err != nil {
		op.Stop()
		return nil, err
	}
	return op, nil
}

// StartMPIOperator installs mpi-operator's CRD and starts it.
func (k *Kubectl) StartMPIOperator(ctx context.Context, bin, crds, log string) (*Operator, error) {
	if _, err := k.Run(ctx, nil, "apply", "--server-side", "-f", crds); err != nil {
		return nil, err
	}
	if _, err := k.Run(ctx, nil, "wait", "--for=condition=Established", "--timeout=60s", "-f", crds); err != nil {
		return nil, err
	}
	return startOperator(k, bin, log, []string{"--kubeConfig=" + k.Kubeconfig, "--monitoring-port=0", "--lock-namespace=kube-system"})
}

// startOperator starts bin with args, and env beside the harness's.
func startOperator(k *Kubectl, bin, log string, args []string, env ...string) (*Operator, error) {
	out := os.Stderr
	if log != "" {
		f, err := os.Create(filepath.Clean(log))
		if err != nil {
			return nil, err
		}
		out = f
	}
	cmd := exec.Command(bin, args...) // #nosec G204 -- the harness's own binary
	cmd.Env = append(append(os.Environ(), EnvKubeconfig+"="+k.Kubeconfig), env...)
	cmd.Stdout, cmd.Stderr = out, out
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	op := &Operator{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(op.done) }()
	select {
	case <-op.done:
		return nil, fmt.Errorf("%s exited at once (log: %s)", filepath.Base(bin), log)
	case <-time.After(3 * time.Second):
	}
	return op, nil
}

// Stop ends the operator (SIGINT, then SIGKILL after 10 s).
func (o *Operator) Stop() {
	_ = o.cmd.Process.Signal(os.Interrupt)
	select {
	case <-o.done:
	case <-time.After(10 * time.Second):
		_ = o.cmd.Process.Kill()
		<-o.done
	}
}

func (k *Kubectl) mountWebhookCerts(ctx context.Context) error {
	const dir = "/tmp/k8s-webhook-server/serving-certs" // the operator's fixed path
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, err := k.Run(ctx, nil, "get", "secret", "-n", "kubeflow", "training-operator-webhook-cert", "-o", "json")
		if err != nil {
			return err
		}
		var sec struct {
			Data map[string][]byte `json:"data"`
		}
		if err := json.Unmarshal(out, &sec); err != nil {
			return err
		}
		if len(sec.Data["tls.crt"]) > 0 && len(sec.Data["tls.key"]) > 0 {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return err
			}
			for name, b := range sec.Data {
				if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
					return err
				}
			}
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("the training operator wrote no webhook certificate in 60 s")
		}
		time.Sleep(time.Second)
	}
}
