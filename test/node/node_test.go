package node_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trainsonnet/trainsonnet/test/node"

	_ "github.com/trainsonnet/trainsonnet/internal/goldentest" // accept the module-wide -update flag
)

// TestNewSSHKeyPair checks the key files with OpenSSH itself: ssh-keygen
// must read the private key and derive the same public key from it.
func TestNewSSHKeyPair(t *testing.T) {
	keygen, err := exec.LookPath("ssh-keygen")
	if err != nil {
		t.Skip("ssh-keygen not installed")
	}
	keys, err := node.NewSSHKeyPair("trainsonnet-test")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(keys.Public), "ssh-ed25519 "))
	require.True(t, strings.HasSuffix(string(keys.Public), " trainsonnet-test\n"))

	file := filepath.Join(t.TempDir(), "id_ed25519")
	require.NoError(t, os.WriteFile(file, keys.Private, 0o600))
	out, err := exec.Command(keygen, "-y", "-f", file).CombinedOutput()
	require.NoError(t, err, "ssh-keygen -y: %s", out)
	// ssh-keygen prints the public key with the comment of the private key.
	require.Equal(t, string(keys.Public), string(out))
}

func TestFromEnvSkipsWithoutNode(t *testing.T) {
	t.Setenv(node.EnableEnv, "")
	c, reason := node.FromEnv()
	require.Nil(t, c)
	require.Contains(t, reason, node.EnableEnv)

	t.Setenv(node.EnableEnv, "1")
	t.Setenv("KUBECTL", "")
	c, reason = node.FromEnv()
	require.Nil(t, c)
	require.Contains(t, reason, "KUBECTL")
}
