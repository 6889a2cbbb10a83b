package lib_test

// The cases of lib/assets/dask.sh, the pods of horovod-dask and the
// scheduler's goto and update; the harness is in scripts_test.go.

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// daskFixture: mpi.sh replaced by a stub that prints what it was started
// with (and the environment the setup made), and a dask stub that logs its
// arguments: the worker's script ends where mpi.sh's own tests begin.
func daskFixture(f *fixture, daskExit string) {
	f.write(filepath.Join(f.cfg, "mpi.sh"),
		"echo \"mpi.sh $* LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-} CONDA_DEFAULT_ENV=${CONDA_DEFAULT_ENV:-}\"\n"+
			"i=0; while [ \"$(cat \"$STUB_DIR/dask.log\" 2>/dev/null | wc -l)\" -lt \"${TS_DASK_NWORKERS:-1}\" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done\n", 0o444)
	if daskExit != "" {
		f.write(filepath.Join(f.bin, "dask"), "#!/bin/sh\necho \"$*\" >>\"$STUB_DIR/dask.log\"\n"+daskExit+"\n", 0o755)
	}
}

func TestDaskScript(t *testing.T) {
	t.Parallel()
	runCases(t, []scriptCase{
		{"goto/rank-by-name", true, func(t *testing.T, f *fixture) {
			// goto is dask.sh under another name, as on the scheduler's PATH.
			require.NoError(t, os.Symlink("dask.sh", filepath.Join(f.cfg, "goto")))
			p := f.startScript("goto", "1")
			assert.Equal(t, 0, p.wait(), p.output())
			calls := f.sshCalls()
			require.Len(t, calls, 1)
			assert.Equal(t, worker1, calls[0].host)
			assert.Equal(t, f.cfg+"/ssh_config", calls[0].config)
		}},
		{"goto/command", false, func(t *testing.T, f *fixture) {
			p := f.startScript("dask.sh", "goto", "0", "nvidia-smi", "-L")
			assert.Equal(t, 0, p.wait(), p.output())
			calls := f.sshCalls()
			require.Len(t, calls, 1)
			assert.Equal(t, sshCall{config: f.cfg + "/ssh_config", host: worker0, args: "nvidia-smi -L"}, calls[0])
		}},
		{"goto/no-such-rank", false, func(t *testing.T, f *fixture) {
			for arg, msg := range map[string]string{
				"2": "goto: no rank 2: the ring has ranks 0 to 1",
				"x": "goto: rank 'x' is not a number",
			} {
				p := f.startScript("dask.sh", "goto", arg)
				assert.Equal(t, 2, p.wait(), p.output())
				assert.Contains(t, p.output(), msg)
			}
			assert.Empty(t, f.sshCalls())
		}},
		{"update/everywhere", true, func(t *testing.T, f *fixture) {
			require.NoError(t, os.Symlink("dask.sh", filepath.Join(f.cfg, "update")))
			p := f.startScript("update", "git", "-C", "/app", "pull")
			assert.Equal(t, 0, p.wait(), p.output())
			assert.Equal(t, []string{worker0, worker1}, f.hostsCalledWith("git -C /app pull"))
			for _, c := range f.sshCalls() {
				assert.True(t, c.n, "ssh -n: update reads no input")
			}
		}},
		{"update/one-host-fails", true, func(t *testing.T, f *fixture) {
			f.host(worker1, "down")
			p := f.startScript("dask.sh", "update", "true")
			assert.Equal(t, 1, p.wait(), p.output())
			out := p.output()
			assert.Contains(t, out, worker1+": ssh: connect to host "+worker1)
			assert.Contains(t, out, "update: "+worker1+": exit code 255")
			assert.Contains(t, out, "update: failed on 1 of 2 hosts")
			assert.NotContains(t, out, "update: "+worker0)
		}},
		{"update/no-command-updates-the-checkout", true, func(t *testing.T, f *fixture) {
			// The seed's "run update to pull the latest repository on each
			// worker": the checkout of the current directory, here and at
			// the same path on every worker.
			f.write(filepath.Join(f.bin, "git"), "#!/bin/sh\necho \"git $* in $(pwd)\" >>\"$STUB_DIR/git.log\"\n", 0o755)
			require.NoError(t, os.Symlink("dask.sh", filepath.Join(f.cfg, "update")))
			p := f.startScript("update")
			assert.Equal(t, 0, p.wait(), p.output())
			assert.Equal(t, []string{"git fetch --all in " + f.runDir, "git reset --hard @{upstream} in " + f.runDir}, f.lines("git.log"))
			want := "cd '" + f.runDir + "' && { git fetch --all && git reset --hard @{upstream}; }"
			assert.Equal(t, []string{worker0, worker1}, f.hostsCalledWith(want), p.output())
		}},
		{"update/no-command-takes-UPDATE_REPO_COMMAND", false, func(t *testing.T, f *fixture) {
			f.env["UPDATE_REPO_COMMAND"] = `echo pulled "it's"`
			p := f.startScript("dask.sh", "update")
			assert.Equal(t, 0, p.wait(), p.output())
			assert.Contains(t, p.output(), "pulled it's")
			assert.Equal(t, []string{worker0, worker1}, f.hostsCalledWith("cd '"+f.runDir+"' && { echo pulled \"it's\"; }"))
		}},
		{"update/no-command-fails-here", false, func(t *testing.T, f *fixture) {
			f.env["UPDATE_REPO_COMMAND"] = "exit 4"
			p := f.startScript("dask.sh", "update")
			assert.Equal(t, 4, p.wait(), p.output())
			assert.Contains(t, p.output(), "exit code 4")
		}},
		{"ui/started-again-and-never-fails", true, func(t *testing.T, f *fixture) {
			// A UI that fails (Jupyter missing from the image, say) is
			// started again and never fails its container: only a signal
			// ends it, with 0.
			p := f.startScript("dask.sh", "ui", "jupyter", "sh", "-c", "echo started >>\"$STUB_DIR/ui.log\"; exit 127")
			p.waitForOutput("trainsonnet: jupyter exited with code 127; starting it again in 5s (the cluster goes on without it)")
			require.False(t, p.exited(), p.output())
			p.waitFor("a second start", func() bool { return len(f.lines("ui.log")) == 2 })
			p.waitForOutput("starting it again in 10s")
			p.signal(syscall.SIGTERM)
			assert.Equal(t, 0, p.wait(), p.output())
		}},
		{"ui/stops-the-ui-on-SIGTERM", false, func(t *testing.T, f *fixture) {
			p := f.startScript("dask.sh", "ui", "tensorboard", "sh", "-c", "trap 'echo got-term >>\"$STUB_DIR/ui.log\"; exit 0' TERM; echo up >>\"$STUB_DIR/ui.log\"; while :; do sleep 1; done")
			p.waitFor("the UI", func() bool { return len(f.lines("ui.log")) == 1 })
			p.signal(syscall.SIGTERM)
			assert.Equal(t, 0, p.wait(), p.output())
			p.waitFor("the UI got SIGTERM", func() bool { return len(f.lines("ui.log")) == 2 })
		}},
		{"worker/dask-workers-beside-sshd", true, func(t *testing.T, f *fixture) {
			daskFixture(f, "sleep 30")
			stubs := filepath.Join(f.runDir, "stubs")
			require.NoError(t, os.Mkdir(stubs, 0o755))
			f.env["TS_CUDA_STUBS"] = stubs
			f.env["TS_GPU_DRIVER_FILE"] = filepath.Join(f.runDir, "no-driver")
			f.env["TS_DASK_SCHEDULER"] = "tcp://train-dask:8786"
			f.env["TS_DASK_NWORKERS"] = "2"
			f.env["TS_DASK_NTHREADS"] = "4"
			f.env["TS_DASK_MEMORY"] = "2G"
			f.env["TS_DASK_RESOURCES"] = "CPU=4 MEM=2000000000 GPU=1"
			p := f.startScript("dask.sh", "worker")
			assert.Equal(t, 0, p.wait(), p.output())
			assert.Contains(t, p.output(), "mpi.sh worker LD_LIBRARY_PATH="+stubs+" ")
			assert.Contains(t, p.output(), "no GPU driver on this node: CUDA stubs from "+stubs)
			host, err := os.Hostname()
			require.NoError(t, err)
			// one process and one restart loop per Dask worker, named as --nworkers 2 names them
			args := "worker tcp://train-dask:8786 --nworkers 1 --nthreads 4 --memory-limit 2G --resources CPU=4 MEM=2000000000 GPU=1 --name " + host
			assert.ElementsMatch(t, []string{args + "-0", args + "-1"}, f.lines("dask.log"))
		}},
		{"worker/dask-workers-start-again", false, func(t *testing.T, f *fixture) {
			daskFixture(f, "exit 1")
			// mpi.sh stays up until the Dask workers were started twice
			f.write(filepath.Join(f.cfg, "mpi.sh"), "i=0; while [ \"$(wc -l <\"$STUB_DIR/dask.log\" 2>/dev/null || echo 0)\" -lt 2 ] && [ $i -lt 150 ]; do sleep 0.1; i=$((i+1)); done\n", 0o444)
			f.env["TS_DASK_SCHEDULER"] = "tcp://train-dask:8786"
			p := f.startScript("dask.sh", "worker")
			assert.Equal(t, 0, p.wait(), p.output())
			assert.Len(t, f.lines("dask.log"), 2)
			assert.Contains(t, p.output(), "exited with code 1; starting it again in 5s")
		}},
		{"worker/gpu-node-no-stubs", false, func(t *testing.T, f *fixture) {
			daskFixture(f, "")
			f.env["TS_CUDA_STUBS"] = "/usr/local/cuda/lib64/stubs"
			driver := filepath.Join(f.runDir, "version")
			f.touch(driver)
			f.env["TS_GPU_DRIVER_FILE"] = driver
			f.env["TS_DASK_SCHEDULER"] = "tcp://train-dask:8786"
			p := f.startScript("dask.sh", "worker")
			assert.Equal(t, 0, p.wait(), p.output())
			assert.Contains(t, p.output(), "mpi.sh worker LD_LIBRARY_PATH= ")
			assert.Contains(t, p.output(), "dask not found in PATH: install Dask's distributed in the image; this worker serves ssh only")
		}},
		{"worker/setup-fails", false, func(t *testing.T, f *fixture) {
			daskFixture(f, "sleep 30")
			f.env["TS_SETUP"] = "echo pulling; exit 7"
			f.env["TS_DASK_SCHEDULER"] = "tcp://train-dask:8786"
			p := f.startScript("dask.sh", "worker")
			assert.Equal(t, 7, p.wait(), p.output())
			assert.Contains(t, p.output(), "pulling")
			assert.Contains(t, p.output(), "worker.args exited with code 7")
			assert.NotContains(t, p.output(), "mpi.sh worker")
			assert.Empty(t, f.lines("dask.log"))
		}},
		{"launcher/conda-environment", false, func(t *testing.T, f *fixture) {
			daskFixture(f, "")
			base := filepath.Join(f.runDir, "conda")
			require.NoError(t, os.MkdirAll(filepath.Join(base, "envs", "kolotoc", "bin"), 0o755))
			f.write(filepath.Join(f.bin, "conda"), "#!/bin/sh\n[ \"$*\" = 'info --base' ] && echo "+base+"\n", 0o755)
			f.env["TS_PROJECT"] = "kolotoc"
			f.touch(filepath.Join(f.stub, "dask.log")) // the mpi.sh stub waits for nothing
			f.write(filepath.Join(f.stub, "dask.log"), "x\n", 0o644)
			p := f.startScript("dask.sh", "launcher")
			assert.Equal(t, 0, p.wait(), p.output())
			assert.Contains(t, p.output(), "mpi.sh launcher LD_LIBRARY_PATH= CONDA_DEFAULT_ENV=kolotoc")
			assert.Contains(t, p.output(), "conda environment kolotoc active")
		}},
		{"run/usage", false, func(t *testing.T, f *fixture) {
			for _, args := range [][]string{{}, {"run"}, {"serve"}, {"ui", "jupyter"}} {
				p := f.startScript("dask.sh", args...)
				assert.Equal(t, 2, p.wait(), "%v: %s", args, p.output())
				assert.True(t, strings.Contains(p.output(), "usage: goto N"), p.output())
			}
		}},
	})
}
