package kube

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// Trainer describes a run of the Kubeflow Trainer v2's controller manager
// (test/cluster/build.sh operators builds it). It needs the JobSet
// controller of the harness (up.sh WITH_JOBSET=1): the Trainer makes a
// JobSet of every TrainJob, and JobSet's webhooks default what the
// Trainer's runtimes leave out.
type Trainer struct {
	Bin      string // its binary
	CRDs     string // its CRDs (a YAML stream)
	Webhooks string // its webhook configurations, as its module has them
	Runtimes string // the ClusterTrainingRuntimes to install ("": none)
	Log      string // its log file ("": stderr)
	Dir      string // its state: configuration and certificates
	// Ports on 127.0.0.1: its webhook server and its health probes.
	WebhookPort, HealthPort int
}

// StartTrainer installs the Trainer's CRDs, starts it as a host process
// with its webhooks served at 127.0.0.1 under a certificate of the
// harness's CA (its own certificate management is off: it would issue one
// for a Service's name, which the API server cannot reach here), registers
// its webhooks by URL, as up.sh does Kueue's and JobSet's, so that a
// TrainJob is defaulted and validated as users' are, and installs the
// runtimes through them.
func (k *Kubectl) StartTrainer(ctx context.Context, t Trainer) (*Operator, error) {
	pki := os.Getenv("TRAINSONNET_PKI")
	if pki == "" {
		return nil, fmt.Errorf("TRAINSONNET_PKI is not set: run under test/cluster/with-cluster.sh")
	}
	if _, err := k.Run(ctx, nil, "apply", "--server-side", "-f", t.CRDs); err != nil {
		return nil, err
	}
	if _, err := k.Run(ctx, nil, "wait", "--for=condition=Established", "--timeout=60s", "-f", t.CRDs); err != nil {
		return nil, err
	}
	// controller-runtime's default certificate directory is under
	// os.TempDir(), and the Trainer's configuration has no field for it
	certs := filepath.Join(t.Dir, "tmp", "k8s-webhook-server", "serving-certs")
	if err := os.MkdirAll(certs, 0o700); err != nil {
		return nil, err
	}
	// the JobSet webhook's certificate: serverAuth for IP 127.0.0.1
	for from, to := range map[string]string{"jobset-webhook.crt": "tls.crt", "jobset-webhook.key": "tls.key"} {
		b, err := os.ReadFile(filepath.Join(pki, from)) // #nosec G304 -- the harness's PKI
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(certs, to), b, 0o600); err != nil {
			return nil, err
		}
	}
	config := fmt.Sprintf(`apiVersion: config.trainer.kubeflow.org/v1alpha1
kind: Configuration
health: {healthProbeBindAddress: "127.0.0.1:%d", readinessEndpointName: readyz, livenessEndpointName: healthz}
metrics: {bindAddress: "0"}
webhook: {host: 127.0.0.1, port: %d}
certManagement: {enable: false}
`, t.HealthPort, t.WebhookPort)
	cfgFile := filepath.Join(t.Dir, "config.yaml")
	if err := os.WriteFile(cfgFile, []byte(config), 0o600); err != nil {
		return nil, err
	}
	op, err := startOperator(k, t.Bin, t.Log, []string{"--config=" + cfgFile}, "TMPDIR="+filepath.Join(t.Dir, "tmp"))
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Operator, error) { op.Stop(); return nil, err }
	if err := waitReady(ctx, fmt.Sprintf("http://127.0.0.1:%d/readyz", t.HealthPort), 60*time.Second); err != nil {
		return fail(fmt.Errorf("the Trainer: %w (log: %s)", err, t.Log))
	}
	ca, err := os.ReadFile(filepath.Join(pki, "ca.crt")) // #nosec G304 -- the harness's PKI
	if err != nil {
		return fail(err)
	}
	hooks, err := localWebhooks(ctx, k, t.Webhooks, "trainer", t.WebhookPort, ca)
	if err != nil {
		return fail(err)
	}
	if _, err := k.Run(ctx, hooks, "apply", "-f", "-"); err != nil {
		return fail(err)
	}
	if t.Runtimes != "" {
		// the webhook may take a moment to be reachable through the API
		// server: the runtimes go through it
		deadline := time.Now().Add(30 * time.Second)
		for {
			_, err := k.Run(ctx, nil, "apply", "--server-side", "-f", t.Runtimes)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fail(err)
			}
			time.Sleep(time.Second)
		}
	}
	return op, nil
}

// localWebhooks is the webhook configurations of file, named after owner,
// each webhook called at https://127.0.0.1:port with the CA ca.
func localWebhooks(ctx context.Context, k *Kubectl, file, owner string, port int, ca []byte) ([]byte, error) {
	out, err := k.Run(ctx, nil, "create", "--dry-run=client", "-o", "json", "-f", file)
	if err != nil {
		return nil, err
	}
	var objs []map[string]any
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var o map[string]any
		if err := dec.Decode(&o); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		if o["kind"] == "List" {
			items, _ := o["items"].([]any)
			for _, it := range items {
				m, _ := it.(map[string]any)
				objs = append(objs, m)
			}
			continue
		}
		objs = append(objs, o)
	}
	for _, o := range objs {
		md, _ := o["metadata"].(map[string]any)
		md["name"] = fmt.Sprintf("trainsonnet-%s-%v", owner, md["name"])
		hooks, _ := o["webhooks"].([]any)
		for _, h := range hooks {
			w, _ := h.(map[string]any)
			cc, _ := w["clientConfig"].(map[string]any)
			svc, _ := cc["service"].(map[string]any)
			w["clientConfig"] = map[string]any{
				"url":      fmt.Sprintf("https://127.0.0.1:%d%v", port, svc["path"]),
				"caBundle": base64.StdEncoding.EncodeToString(ca),
			}
		}
	}
	return json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": objs})
}

// waitReady waits for url to answer 200.
func waitReady(ctx context.Context, url string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s", url, limit)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
