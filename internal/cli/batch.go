package cli

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

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

// batchFiles expands the arguments into the jobs' files, in order. Only
// regular files are read (a FIFO would hang the run), each once, and each
// must name a job (jobName).
func batchFiles(args []string) ([]string, error) {
	var files []string
	var infos []os.FileInfo // of files, for os.SameFile
	add := func(f string, st os.FileInfo) error {
		if !st.Mode().IsRegular() {
			return usagef("%s: is not a regular file; a batch reads params files only", f)
		}
		if name := jobNameOf(f); name == "" || strings.HasPrefix(name, ".") {
			return usagef("%s: names no job: a job is its file's name without the extension, which must not be empty or start with a dot (rename the file)", f)
		}
		for i, prev := range infos {
			if os.SameFile(prev, st) {
				return usagef("%s and %s are the same file: give each job once", files[i], f)
			}
		}
		infos = append(infos, st)
		files = append(files, f)
		return nil
	}
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return nil, usagef("%s: %v", a, unwrapPath(err))
		}
		if !st.IsDir() {
			if err := add(a, st); err != nil {
				return nil, err
			}
			continue
		}
		entries, err := os.ReadDir(a)
		if err != nil {
			return nil, usagef("%s: %v", a, unwrapPath(err))
		}
		n := len(files)
		for _, e := range entries {
			if e.IsDir() || !slices.Contains(batchExts, filepath.Ext(e.Name())) {
				continue
			}
			f := filepath.Join(a, e.Name())
			st, err := os.Stat(f)
			if err != nil {
				return nil, usagef("%s: %v", f, unwrapPath(err))
			}
			if st.IsDir() {
				continue
			}
			if err := add(f, st); err != nil {
				return nil, err
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
	g, err := root.generator()
	if err != nil {
		return err
	}
	jobs := make([]generator.Job, 0, len(files))
	byName := map[string]string{}
	var failed []generator.JobError
	// the Trainer runtimes among the files: no jobs, the runtimes of the
	// TrainJobs that name them
	datas := make(map[string][]byte, len(files))
	var runtimes []generator.File
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return usagef("%s: %v", f, unwrapPath(err))
		}
		datas[f] = data
		if generator.RuntimeFile(f, data) {
			runtimes = append(runtimes, generator.File{Name: f, Data: data})
		}
	}
	for _, f := range files {
		data := datas[f]
		if generator.RuntimeFile(f, data) {
			continue
		}
		name := strings.TrimSuffix(filepath.Base(f), filepath.Ext(f))
		if other, ok := byName[name]; ok && outputDir != "" {
			return usagef("%s and %s are both job %s: with --output-dir each job needs a name of its own", other, f, name)
		}
		byName[name] = f
		params, err := g.JobParams(f, data, runtimes...)
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
	// Each job is encoded as soon as it is rendered, on the core that
	// rendered it, and only its bytes are kept: a batch holds its output,
	// not every job's objects.
	type encoded struct {
		warnings []string
		doc      []byte           // the job's YAML documents or JSON List
		base     []generator.File // with --output-dir
		objects  []string         // the objects' identities (objectKey)
	}
	out := make([]encoded, len(jobs))
	err = g.RenderEach(cmd.Context(), jobs, func(i int, res *generator.Result) (err error) {
		out[i].warnings = res.Warnings
		for _, o := range res.Objects {
			out[i].objects = append(out[i].objects, objectKey(o))
		}
		switch {
		case outputDir != "":
			out[i].base, err = res.KustomizeBase()
		case output == "json":
			out[i].doc, err = res.JSON()
		default:
			out[i].doc, err = res.YAML()
		}
		return err
	})
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
	// Two jobs that make one object (two files without a name of their
	// own, say) would apply one over the other.
	owner := map[string]int{}
	for i, o := range out {
		for _, k := range o.objects {
			if prev, dup := owner[k]; dup && prev != i {
				return usagef("%s and %s both make %s: give the jobs names of their own (name: in each file)", jobs[prev].Name, jobs[i].Name, strings.SplitN(k, "\x00", 2)[1])
			}
			owner[k] = i
		}
	}
	for i, o := range out {
		for _, w := range o.warnings {
			if !strings.HasPrefix(w, jobs[i].Name+":") {
				w = jobs[i].Name + ": " + w
			}
			fmt.Fprintln(s.Err, "warning: "+w)
		}
	}
	if outputDir != "" {
		for i, o := range out {
			if err := writeDir(filepath.Join(outputDir, jobName(jobs[i])), o.base); err != nil {
				return err
			}
		}
		return nil
	}
	stream := bufio.NewWriterSize(s.Out, 1<<16)
	for i, o := range out {
		if i > 0 && output != "json" {
			if _, err := stream.WriteString("---\n"); err != nil {
				return err
			}
		}
		if _, err := stream.Write(o.doc); err != nil {
			return err
		}
	}
	return stream.Flush()
}

// objectKey identifies an object in a cluster: its API group, kind,
// namespace and name; then, after a NUL, how to name it.
func objectKey(o *generator.Object) string {
	group, _, _ := strings.Cut(o.APIVersion, "/")
	if !strings.Contains(o.APIVersion, "/") {
		group = ""
	}
	return group + "/" + o.Kind + "/" + o.Namespace + "/" + o.Name + "\x00" + o.ID()
}

func jobName(j generator.Job) string { return jobNameOf(j.Name) }

// jobNameOf is the job of a params file: its name without the extension.
func jobNameOf(file string) string {
	return strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
}
