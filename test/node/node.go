// Package node gives Go tests access to the real one-node Kubernetes
// cluster that test/node/with-node.sh (or test/cluster/up.sh followed by
// test/node/up.sh) runs: it reads the environment that up.sh writes to
// $TRAINSONNET_STATE/env, runs kubectl against the cluster, and makes ssh
// key pairs for MPI jobs. See README.md in this directory.
//
// Tests that need the node call FromEnv and skip when it reports a reason,
// so that `go test ./...` stays hermetic on machines without a node.
package node

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Environment variables set by test/node/up.sh (through the env file).
const (
	// EnableEnv must be "1" for node tests to run.
	EnableEnv = "TRAINSONNET_E2E_NODE"
	// ImageEnv holds the MPI test image, localhost/trainsonnet-mpi:<tag>.
	ImageEnv = "TRAINSONNET_TEST_IMAGE"
	// EntrypointImageEnv holds the same image with the training program as
	// its ENTRYPOINT (python3 /training/train.py), of the same tag.
	EntrypointImageEnv = "TRAINSONNET_ENTRYPOINT_IMAGE"
	// NodeNameEnv holds the name of the node.
	NodeNameEnv = "TRAINSONNET_NODE_NAME"
	// NodeIPEnv holds the node's IP: its kubelet's and NodePorts' address.
	NodeIPEnv = "TRAINSONNET_NODE_IP"
	// BridgeEnv holds the name of the bridge the pods' veths are ports of,
	// which holds the node IP.
	BridgeEnv = "TRAINSONNET_NODE_BRIDGE"
	// UpIDEnv differs for every start of the node. FromEnv reads it so that
	// go test's result cache, keyed on the environment variables a test
	// reads, never replays a result obtained against an earlier node.
	UpIDEnv = "TRAINSONNET_NODE_UP_ID"
)

// Cluster is the running cluster with its one real node.
type Cluster struct {
	Kubectl    string // path of kubectl ($KUBECTL)
	Kubeconfig string // admin kubeconfig ($KUBECONFIG)
	Image      string // the MPI test image ($TRAINSONNET_TEST_IMAGE)
	// EntrypointImage is the same with the training program as its
	// ENTRYPOINT ($TRAINSONNET_ENTRYPOINT_IMAGE)
	EntrypointImage string
	NodeName        string // the node's name ($TRAINSONNET_NODE_NAME)
	NodeIP          string // the node's IP ($TRAINSONNET_NODE_IP)
	Bridge          string // the pods' bridge ($TRAINSONNET_NODE_BRIDGE)
}

// FromEnv returns the cluster described by the environment. If node tests
// are not enabled or the environment is incomplete, it returns nil and the
// reason, to be passed to t.Skip.
func FromEnv() (*Cluster, string) {
	if os.Getenv(EnableEnv) != "1" {
		return nil, EnableEnv + " is not 1: no real node (run the test through test/node/with-node.sh)"
	}
	c := &Cluster{
		Kubectl:         os.Getenv("KUBECTL"),
		Kubeconfig:      os.Getenv("KUBECONFIG"),
		Image:           os.Getenv(ImageEnv),
		EntrypointImage: os.Getenv(EntrypointImageEnv),
		NodeName:        os.Getenv(NodeNameEnv),
		NodeIP:          os.Getenv(NodeIPEnv),
		Bridge:          os.Getenv(BridgeEnv),
	}
	_ = os.Getenv(UpIDEnv) // see UpIDEnv
	var missing []string
	for name, v := range map[string]string{"KUBECTL": c.Kubectl, "KUBECONFIG": c.Kubeconfig, ImageEnv: c.Image, EntrypointImageEnv: c.EntrypointImage, NodeNameEnv: c.NodeName, NodeIPEnv: c.NodeIP, BridgeEnv: c.Bridge} {
		if v == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Sprintf("%s=1 but %s unset: source $TRAINSONNET_STATE/env after test/node/up.sh", EnableEnv, strings.Join(missing, ", "))
	}
	return c, ""
}

// Run runs kubectl with args against the cluster, with stdin (may be
// empty), and returns its standard output. The error includes the standard
// error. ctx bounds the run.
func (c *Cluster) Run(ctx context.Context, stdin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, c.Kubectl, append([]string{"--kubeconfig=" + c.Kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctxErr := ctx.Err(); ctxErr != nil && err != nil {
		err = errors.Join(ctxErr, err)
	}
	if err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// SSHKeyPair is an ed25519 key pair in OpenSSH's file formats.
type SSHKeyPair struct {
	Private []byte // "-----BEGIN OPENSSH PRIVATE KEY-----" PEM, unencrypted
	Public  []byte // authorized_keys line: "ssh-ed25519 AAAA... comment\n"
}

// NewSSHKeyPair makes a fresh, unencrypted ed25519 key pair, as ssh-keygen
// -t ed25519 would, with the standard library only.
func NewSSHKeyPair(comment string) (*SSHKeyPair, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	pubBlob := sshString(nil, []byte("ssh-ed25519"))
	pubBlob = sshString(pubBlob, pub)

	// openssh-key-v1: one unencrypted key; see OpenSSH's PROTOCOL.key.
	var check [4]byte
	if _, err := rand.Read(check[:]); err != nil {
		return nil, err
	}
	secret := append(check[:], check[:]...)
	secret = sshString(secret, []byte("ssh-ed25519"))
	secret = sshString(secret, pub)
	secret = sshString(secret, priv) // seed || public key, 64 bytes
	secret = sshString(secret, []byte(comment))
	for i := byte(1); len(secret)%8 != 0; i++ {
		secret = append(secret, i)
	}
	blob := []byte("openssh-key-v1\x00")
	blob = sshString(blob, []byte("none")) // cipher
	blob = sshString(blob, []byte("none")) // KDF
	blob = sshString(blob, nil)            // KDF options
	blob = binary.BigEndian.AppendUint32(blob, 1)
	blob = sshString(blob, pubBlob)
	blob = sshString(blob, secret)

	return &SSHKeyPair{
		Private: pem.EncodeToMemory(&pem.Block{Type: "OPENSSH PRIVATE KEY", Bytes: blob}),
		Public:  []byte("ssh-ed25519 " + base64.StdEncoding.EncodeToString(pubBlob) + " " + comment + "\n"),
	}, nil
}

// sshString appends b to buf as an SSH wire-format string.
func sshString(buf, b []byte) []byte {
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(b)))
	return append(buf, b...)
}
