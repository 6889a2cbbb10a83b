package lib_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-jsonnet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSSHConfig: what the ssh configuration rendered by lib/ssh.libsonnet
// must say for the pods' scripts to work (test/scripts runs it with the
// real sshd and ssh): the port, the files mpi.sh makes in the run dir, and
// no option a modern sshd rejects.
func TestSSHConfig(t *testing.T) {
	dir := "/run/x/ssh"
	client, server := renderSSHConfig(t, 2222, dir)
	for _, want := range []string{"Host *", "    Port 2222", "    IdentityFile " + dir + "/id",
		"    IdentitiesOnly yes", "    StrictHostKeyChecking no", "    UserKnownHostsFile /dev/null",
		"    LogLevel ERROR", "    BatchMode yes", "    ConnectTimeout 60",
		"    ServerAliveInterval 15", "    ServerAliveCountMax 4"} {
		assert.Contains(t, client, "\n"+want+"\n")
	}
	for _, want := range []string{"Port 2222", "HostKey " + dir + "/ssh_host_ed25519_key",
		"AuthorizedKeysFile " + dir + "/authorized_keys", "PidFile " + dir + "/sshd.pid",
		"PasswordAuthentication no", "KbdInteractiveAuthentication no", "PubkeyAuthentication yes",
		"PermitRootLogin prohibit-password", "UsePAM no", "StrictModes no", "PrintMotd no",
		"Subsystem sftp internal-sftp", "ClientAliveInterval 15", "ClientAliveCountMax 4"} {
		assert.Contains(t, server, "\n"+want+"\n")
	}
	for _, opt := range []string{"Protocol", "UsePrivilegeSeparation", "KeyRegenerationInterval",
		"ServerKeyBits", "RSAAuthentication", "RhostsRSAAuthentication", "dsa", "DSA", "ForceCommand"} {
		assert.NotContains(t, server, opt)
	}
	for _, text := range []string{client, server} {
		assert.True(t, strings.HasSuffix(text, "\n") && !strings.HasSuffix(text, "\n\n"), "one final newline:\n%s", text)
		assert.NotContains(t, text, "\t", "readable in YAML (TestAssetsStayReadableInYAML)")
		assert.NotContains(t, text, " \n")
	}
}

// renderSSHConfig renders lib/ssh.libsonnet's client and server
// configuration for port and the ssh run dir dir.
func renderSSHConfig(t *testing.T, port int, dir string) (client, server string) {
	t.Helper()
	vm := jsonnet.MakeVM()
	vm.Importer(&jsonnet.FileImporter{JPaths: []string{"."}})
	vm.TLACode("port", strconv.Itoa(port))
	vm.TLAVar("dir", dir)
	out, err := vm.EvaluateAnonymousSnippet("ssh-config.jsonnet", `
local ssh = import 'ssh.libsonnet';
function(port, dir) [ssh.client(port, dir), ssh.server(port, dir)]`)
	require.NoError(t, err)
	var texts []string
	require.NoError(t, json.Unmarshal([]byte(out), &texts))
	return texts[0], texts[1]
}
