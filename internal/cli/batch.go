package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/spf13/cobra"

	"github.com/trainsonnet/trainsonnet/generator"
)

// batchExts are the params files a directory given to batch holds.
var batchExts = []string{".yaml", ".yml", ".json"}

func newBatchCmd(root *rootOptions, s Streams) *cobra.Command {
	var outputDir string
	output := newOutputFormat("yaml", "yaml", "json")
	cmd := &cobra.Command{
		Use:   "batch (DIR | FILE)... [-o yaml|json] [--output-dir DIR]",
		Short: "Render many jobs in one run: one params file per job, each naming its prototype",
		Long: `Render many jobs at once. Each params file is one job: its top-level key
prototype names the prototype, and the rest are its parameters, as with
'trainsonnet gen <prototype> -f FILE' (which accepts the same file). A directory
stands for its *.yaml, *.yml and *.json files, in name order (not its
subdirectories). A job's name is its file's name without the extension.

Every job is checked before anything is written: any problem in any job (each
named by its file) exits with code 2 and writes nothing. stdout gets every
job's manifests, one job after the other (a YAML stream; with -o json one v1
List per job); --output-dir DIR writes one kustomize base per job, DIR/<job>/,
each replacing a previous base there as gen --output-dir does. Warnings go to
stderr, each naming its job.

The prototypes are parsed once for the whole run, so each job after the first
costs little more than its render: GitOps pipelines can render every job of a
repository on each sync.`,
		Example: `  trainsonnet batch jobs/ > manifests.yaml
  trainsonnet batch jobs/ --output-dir bases/   # bases/<job>/kustomization.yaml, ...`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("batch needs params files or directories of them: trainsonnet batch jobs/")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if outputDir != "" && cmd.Flags().Changed("output") && output.value != "yaml" {
				return usagef("--output-dir writes kustomize bases (YAML); it cannot be combined with -o %s", output.value)
			}
			return runBatch(cmd, root, s, args, output.value, outputDir)
		},
	}
	cmd.Flags().VarP(output, "output", "o", "output format on stdout: yaml (one --- separated stream) or json (one v1 List per job)")
	cmd.Flags().StringVar(&outputDir, "output-dir", "", "write one kustomize base per job, DIR/<job>/, instead of stdout")
	return cmd
}

// batchFiles expands the arguments into the jobs' files, in order.
func batchFiles(args []string) ([]string, error) {
	var files []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return nil, usagef("%s: %v", a, unwrapPath(err))
		}
		if !st.IsDir() {
			files = append(files, a)
			continue
		}
		entries, err := os.ReadDir(a)
		if err != nil {
			return nil, usagef("%s: %v", a, unwrapPath(err))
		}
		n := len(files)
		for _, e := range entries {
			if !e.IsDir() && slices.Contains(batchExts, filepath.Ext(e.Name())) {
				files = append(files, filepath.Join(a, e.Name()))
			}
		}
		if len(files) == n {
			return nil, usagef("%s: no params files (*.yaml, *.yml, *.json) in this directory", a)
		}
	}
	return files, nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func runBatch(cmd *cobra.Command, root *rootOptions, s Streams, args []string, output, outputDir string) error {
	files, err := batchFiles(args)
	if err != nil {
		return err
	}
	jobs := make([]generator.Job, 0, len(files))
	byName := map[string]string{}
	var failed []generator.JobError
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), filepath.Ext(f))
		if other, ok := byName[name]; ok && outputDir != "" {
			return usagef("%s and %s are both job %s: with --output-dir each job needs a name of its own", other, f, name)
		}
		byName[name] = f
		data, err := os.ReadFile(f)
		if err != nil {
			return usagef("%s: %v", f, unwrapPath(err))
		}
		params, err := generator.JobParams(f, data)
		if err != nil {
			failed = append(failed, generator.JobError{Job: f, Err: err})
			continue
		}
		jobs = append(jobs, generator.Job{Name: f, Params: params})
	}
	if outputDir != "" {
		for _, j := range jobs {
			if err := checkOutputDir(filepath.Join(outputDir, jobName(j))); err != nil {
				return err
			}
		}
	}
	g, err := root.generator()
	if err != nil {
		return err
	}
	results, err := g.RenderAll(cmd.Context(), jobs)
	var be *generator.BatchError
	if errors.As(err, &be) {
		failed = append(failed, be.Failed...)
	} else if err != nil {
		return err
	}
	if failed != nil {
		slices.SortStableFunc(failed, func(a, b generator.JobError) int {
			return slices.Index(files, a.Job) - slices.Index(files, b.Job)
		})
		return &generator.BatchError{Failed: failed}
	}
	for i, res := range results {
		for _, w := range res.Warnings {
			if !strings.HasPrefix(w, jobs[i].Name+":") {
				w = jobs[i].Name + ": " + w
			}
			fmt.Fprintln(s.Err, "warning: "+w)
		}
	}
	// Encoding takes a tenth of a batch: done on every core, like the
	// renders, then written in the jobs' order.
	if outputDir != "" {
		bases := make([][]generator.File, len(results))
		if err := onEveryCore(len(results), func(i int) (err error) {
			bases[i], err = results[i].KustomizeBase()
			return err
		}); err != nil {
			return err
		}
		for i, base := range bases {
			if err := writeDir(filepath.Join(outputDir, jobName(jobs[i])), base); err != nil {
				return err
			}
		}
		return nil
	}
	docs := make([][]byte, len(results))
	if err := onEveryCore(len(results), func(i int) (err error) {
		if output == "json" {
			docs[i], err = results[i].JSON()
		} else {
			docs[i], err = results[i].YAML()
		}
		return err
	}); err != nil {
		return err
	}
	var out bytes.Buffer
	for i, b := range docs {
		if i > 0 && output != "json" {
			out.WriteString("---\n")
		}
		out.Write(b)
	}
	_, err = s.Out.Write(out.Bytes())
	return err
}

// onEveryCore runs f(0) … f(n-1), as many at once as there are CPUs, and
// returns the error of the lowest i that failed.
func onEveryCore(n int, f func(i int) error) error {
	errs := make([]error, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				errs[i] = f(i)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func jobName(j generator.Job) string {
	return strings.TrimSuffix(filepath.Base(j.Name), filepath.Ext(j.Name))
}
