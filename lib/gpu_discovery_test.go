package lib_test

// The cases of lib/assets/gpu-discovery.sh, Spark's GPU discovery script
// of horovod-spark; the harness is in scripts_test.go.

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestGPUDiscoveryScript: the script prints the container's GPUs in
// Spark's JSON from the first source that names them, and fails when none
// does, under every shell.
func TestGPUDiscoveryScript(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, smi, visible, gpus string
		code                     int
		out                      string
	}{
		{name: "nvidia-smi", smi: "0\n1\n", visible: "GPU-a", code: 0, out: `{"name": "gpu", "addresses": ["0", "1"]}` + "\n"},
		{name: "device-plugin", visible: "GPU-a,GPU-b,GPU-c", gpus: "1", code: 0, out: `{"name": "gpu", "addresses": ["0", "1", "2"]}` + "\n"},
		{name: "gpu-parameter", visible: "all", gpus: "2", code: 0, out: `{"name": "gpu", "addresses": ["0", "1"]}` + "\n"},
		{name: "none", visible: "void", code: 1},
		{name: "not-a-number", gpus: "two", code: 1},
	}
	var sc []scriptCase
	for _, c := range cases {
		sc = append(sc, scriptCase{"gpu-discovery/" + c.name, true, func(t *testing.T, f *fixture) {
			if c.smi != "" {
				f.write(f.bin+"/nvidia-smi", "#!/bin/sh\nprintf '"+c.smi+"'\n", 0o755)
			}
			for k, v := range map[string]string{"NVIDIA_VISIBLE_DEVICES": c.visible, "TS_GPUS": c.gpus} {
				if v != "" {
					f.env[k] = v
				}
			}
			p := f.startScript("gpu-discovery.sh")
			assert.Equal(t, c.code, p.wait(), p.output())
			if c.code == 0 {
				assert.Equal(t, c.out, p.output())
			} else {
				assert.Contains(t, p.output(), "trainsonnet: no GPU found")
			}
		}})
	}
	runCases(t, sc)
}
