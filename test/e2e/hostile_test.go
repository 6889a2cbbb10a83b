package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/trainsonnet/trainsonnet/test/kube"
)

// TestHostileInputs holds the edge cases of issue 25 (and inputs like
// them) to one rule against a real API server: trainsonnet refuses them
// (exit 2, one problem per line, nothing on stdout), or what it renders
// the API server takes. The ones that used to render and be refused (a
// user volume named like the prototype's own, a mount at one of its paths
// spelled differently, annotations at the API's limit) must now be
// refused here; the ones with YAML-hostile or $-holding text must render
// and apply.
func TestHostileInputs(t *testing.T) {
	k := kube.E2E(t)
	nss := newNamespaces(t, k)
	ns := nss.create(t, "e2e-hostile", kube.Privileged)
	big := strings.Repeat("x", 256*1024-200)
	for _, c := range []struct {
		args   []string
		refuse bool // must be refused by trainsonnet
	}{
		{[]string{"gen", "eval", "--storage-claim-name", "c", "--volumes", `[{"name":"trainsonnet-storage","emptyDir":{}}]`, "--volume-mounts", `[{"name":"trainsonnet-storage","mountPath":"/x"}]`}, true},
		{[]string{"gen", "horovod-dask", "--volumes", `[{"name":"trainsonnet-helpers","emptyDir":{}}]`}, true},
		{[]string{"gen", "tf-distributed", "--volumes", `[{"name":"d","emptyDir":{}}]`, "--volume-mounts", `[{"name":"d","mountPath":"/etc/trainsonnet/"}]`}, true},
		{[]string{"gen", "openmpi", "--ssh-secret", "s", "--volumes", `[{"name":"d","emptyDir":{}}]`, "--volume-mounts", `[{"name":"d","mountPath":"/etc//trainsonnet"}]`}, true},
		// a user mount at /dev/shm replaces the job's own, however it is spelled
		{[]string{"gen", "horovod", "--volumes", `[{"name":"d","emptyDir":{}}]`, "--volume-mounts", `[{"name":"d","mountPath":"/dev/shm/"}]`}, false},
		{[]string{"gen", "horovod-dask", "--volumes", `[{"name":"d","emptyDir":{}}]`, "--volume-mounts", `[{"name":"d","mountPath":"/kolotoc/generated/"}]`}, true},
		{[]string{"gen", "tf-distributed", "--annotations", "a=" + big}, true},
		{[]string{"gen", "horovod-spark", "--worker-ui-port", "7077"}, true},
		{[]string{"gen", "openmpi", "--ssh-secret", "s", "--image", "repo/:tag"}, true},
		// text the YAML and the kubelet would change: rendered as typed
		{[]string{"gen", "openmpi", "--ssh-secret", "s", "--exec", "=", "--env", "X=<<", "--env", "Y=$(HOME) $$"}, false},
		{[]string{"gen", "tf-distributed", "--exec", `echo $$ > run.$$.pid`, "--labels", "v=1.10"}, false},
		{[]string{"gen", "tensorboard", "--annotations", "a=" + strings.Repeat("x", 200*1024)}, false},
	} {
		t.Run(strings.Join(c.args[:2], " "), func(t *testing.T) {
			code, stdout, stderr := runCLI(genArgs(c.args, "", ns))
			switch code {
			case 2:
				assert.True(t, c.refuse, "refused: %s", stderr)
				assert.Empty(t, stdout)
				for _, line := range strings.Split(strings.TrimSpace(string(stderr)), "\n") {
					if !strings.HasPrefix(line, "warning: ") {
						assert.True(t, strings.HasPrefix(line, "error: --"), "names the flag: %s", line)
					}
				}
			case 0:
				assert.False(t, c.refuse, "rendered; it must be refused")
				assert.NoError(t, strictDryRun(t.Context(), k, ns, stdout))
			default:
				t.Errorf("exit code %d: %s", code, stderr)
			}
		})
	}
}
