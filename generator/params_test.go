package generator_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/trainsonnet/trainsonnet/generator"
	"github.com/trainsonnet/trainsonnet/generator/param"
	"github.com/trainsonnet/trainsonnet/generator/typed"

	_ "github.com/trainsonnet/trainsonnet/internal/goldentest" // accept the module-wide -update flag
)

func newGenerator(t *testing.T) *generator.Generator {
	t.Helper()
	g, err := generator.New(generator.Options{})
	require.NoError(t, err)
	return g
}

// render renders and returns the objects by "Kind/name".
func render(t *testing.T, g *generator.Generator, p *generator.Params) map[string]string {
	t.Helper()
	res, err := g.Render(context.Background(), p)
	require.NoError(t, err)
	out := map[string]string{}
	for _, o := range res.Objects {
		out[o.Kind+"/"+o.Name] = string(o.JSON())
	}
	return out
}

func validationProblems(t *testing.T, err error) []string {
	t.Helper()
	var verr *generator.ValidationError
	require.True(t, errors.As(err, &verr), "want a ValidationError, got %v", err)
	var out []string
	for _, p := range verr.Problems {
		out = append(out, p.Error())
	}
	return out
}

func TestTextValuesAreParsedByDeclaredType(t *testing.T) {
	g := newGenerator(t)
	objs := render(t, g, generator.NewParams("openmpi").
		SetText("workers", "3", "--workers").
		SetText("gpu", "2", "--gpu").
		SetText("memory", "4096Mi", "--memory").
		SetText("initTimeout", "5m", "--init-timeout").
		SetText("nodeSelector", "pool=gpu,zone=a", "--node-selector").
		SetText("useHostNetwork", "true", "--use-host-network").
		SetText("ssh.port", "2222", "--ssh-port").
		SetText("nodeNetworks", "10.128.0.0/20,10.132.0.0/20", "--node-networks").
		SetText("env", "OPTS=--a=1,--b,B=2", "--env"))
	cm := objs["ConfigMap/openmpi-config"]
	assert.Contains(t, cm, `openmpi-worker-2.openmpi slots=2\n`)
	assert.NotContains(t, cm, "openmpi-worker-3.")
	worker := objs["Job/openmpi-worker"]
	assert.Contains(t, worker, `"memory":"4Gi"`, "quantities are normalized")
	assert.Contains(t, worker, `{"name":"TS_INIT_TIMEOUT","value":"300"}`, "5m is 300 seconds")
	assert.Contains(t, worker, `"nodeSelector":{"pool":"gpu","zone":"a"}`)
	assert.Contains(t, worker, `"hostNetwork":true`)
	assert.Contains(t, worker, `{"name":"OPTS","value":"--a=1,--b"}`, "a piece without = belongs to the value before it")
}

func TestLaterSourcesReplaceEarlierOnes(t *testing.T) {
	g := newGenerator(t)
	objs := render(t, g, generator.NewParams("openmpi").
		AddFile("a.yaml", []byte("workers: 2\nnodeSelector: {a: x, b: y}\nssh: {port: 2200}\n")).
		AddFile("b.yaml", []byte("workers: 5\n")).
		SetText("nodeSelector", "c=z", "--set nodeSelector").
		Set("ssh.port", 2300))
	assert.Contains(t, objs["ConfigMap/openmpi-config"], "openmpi-worker-4.")
	assert.NotContains(t, objs["ConfigMap/openmpi-config"], "openmpi-worker-5.")
	assert.Contains(t, objs["Job/openmpi-worker"], `"nodeSelector":{"c":"z"}`, "a map is replaced as a whole")
	assert.Contains(t, objs["Service/openmpi"], `"port":2300`)
}

func TestNullInAParamsFileMeansDefault(t *testing.T) {
	g := newGenerator(t)
	objs := render(t, g, generator.NewParams("openmpi").
		AddFile("a.yaml", []byte("workers: 7\n")).
		AddFile("b.yaml", []byte("workers: null\n")))
	assert.Contains(t, objs["Job/openmpi-worker"], `"completions":4`)
}

// The charts' values files left values unset as "" and wrote memory as
// Dask does (2GB): a prototype that replaces a chart takes both for what
// they meant, with a warning (its spellings); one that does not refuses
// them.
func TestChartSpellingsOfUnsetAndBytes(t *testing.T) {
	g := newGenerator(t)
	res, err := g.Render(context.Background(), generator.NewParams("horovod").
		AddFile("v.yaml", []byte("worker: {number: 7}\nmemory: 2GB\ncpu: \"\"\n")).
		AddFile("w.yaml", []byte("worker: {number: \"\"}\nmemory: 1.5 GiB\nssh: {port: \"3222\"}\n")).
		SetText("worker.memory", "3 GB", "--worker-memory"))
	require.NoError(t, err)
	assert.Subset(t, res.Warnings, []string{
		`v.yaml: memory: 2GB is taken as 2G, its spelling as a Kubernetes quantity`,
		`v.yaml: cpu: "" is taken as unset (the default) here, as the chart meant it; leave the key out`,
		`w.yaml: worker.number: "" is taken as unset (the default) here, as the chart meant it; leave the key out`,
		`w.yaml: memory: 1.5 GiB is taken as 1536Mi, its spelling as a Kubernetes quantity`,
		`w.yaml: ssh.port: "3222" is taken as 3222, as the chart took it; leave out the quotes`,
		`--worker-memory: 3 GB is taken as 3G, its spelling as a Kubernetes quantity`,
	})
	var worker string
	for _, o := range res.Objects {
		if o.Kind == "Job" && o.Name == "horovod-worker" {
			worker = string(o.JSON())
		}
	}
	assert.Contains(t, worker, `"completions":3`, "worker.number back to its default")
	assert.Contains(t, worker, `"memory":"3G"`, "the flag wins")

	// Not every string ending in B is bytes.
	_, err = g.Render(context.Background(), generator.NewParams("horovod").AddFile("v.yaml", []byte("memory: 2XB\n")))
	assert.Equal(t, []string{`v.yaml: memory: invalid value "2XB": must be a Kubernetes quantity such as 500m, 2 or 4Gi`}, validationProblems(t, err))

	// openmpi replaces no chart: its values are written as declared.
	_, err = g.Render(context.Background(), generator.NewParams("openmpi").
		AddFile("v.yaml", []byte("memory: 2GB\ncpu: \"\"\n")).SetText("workers", "\"3\"", "--workers"))
	assert.Equal(t, []string{
		`v.yaml: cpu: invalid value "": must be a Kubernetes quantity such as 500m, 2 or 4Gi`,
		`v.yaml: memory: invalid value "2GB": must be a Kubernetes quantity such as 500m, 2 or 4Gi`,
		`--workers: invalid value "\"3\"": must be an integer from 1 to 5000`,
	}, validationProblems(t, err))
}

func TestNullGroupResetsItsMembers(t *testing.T) {
	g := newGenerator(t)
	objs := render(t, g, generator.NewParams("openmpi").
		AddFile("a.yaml", []byte("ssh: {port: 2200, secret: s}\n")).
		AddFile("b.yaml", []byte("ssh: null\n")).
		SetText("ssh.port", "2300", "--ssh-port"))
	assert.Contains(t, objs["Service/openmpi"], `"port":2300`)
	assert.Contains(t, objs, "Secret/openmpi-ssh", "ssh.secret is back to its default: a generated key")
}

func TestEveryProblemIsReportedAtOnce(t *testing.T) {
	g := newGenerator(t)
	_, err := g.Render(context.Background(), generator.NewParams("openmpi").
		SetText("workers", "0", "--workers").
		SetText("cpu", "a lot", "--cpu").
		AddFile("p.yaml", []byte("gpu: two\nnodeSelecter: {}\n")).
		Set("image", "UPPER"))
	got := validationProblems(t, err)
	assert.ElementsMatch(t, []string{
		`--workers: invalid value "0": must be an integer from 1 to 5000`,
		`--cpu: invalid value "a lot": must be a Kubernetes quantity such as 500m, 2 or 4Gi`,
		`p.yaml: gpu: invalid value "two": must be an integer from 0 to 1024`,
		`p.yaml: nodeSelecter: unknown parameter "nodeSelecter" for openmpi (did you mean "nodeSelector"?)`,
		`image: invalid value "UPPER": must be an image reference such as registry/repo:tag (repository name (library/UPPER) must be lowercase)`,
	}, got)
	assert.True(t, generator.IsValidation(err))
}

func TestPrototypeRulesNameTheParameterAsGiven(t *testing.T) {
	g := newGenerator(t)
	_, err := g.Render(context.Background(), generator.NewParams("openmpi").
		SetText("useHostNetwork", "true", "--useHostNetwork").
		SetText("nodeNetworks", "10.0.0.0/8", "--nodeNetworks").
		SetText("ssh.port", "22", "--ssh.port"))
	assert.Equal(t, []string{
		`--ssh.port: invalid value "22": must not be 22 with useHostNetwork: the workers share their node's network, where the node's own sshd has port 22`,
	}, validationProblems(t, err))
}

func TestGoValuesOfTheTypedStruct(t *testing.T) {
	g := newGenerator(t)
	cpu := resource.MustParse("1500m")
	timeout := 90 * time.Second
	p := typed.OpenMPI{
		Workers:      ptr.To(2),
		GPU:          ptr.To(1),
		CPU:          &cpu,
		InitTimeout:  &timeout,
		NodeSelector: map[string]string{"pool": "a100"},
		Common: typed.Common{
			Name:          "typed",
			NetworkPolicy: ptr.To(false),
			Volumes:       []corev1.Volume{{Name: "shm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}}},
			VolumeMounts:  []corev1.VolumeMount{{Name: "shm", MountPath: "/dev/shm"}},
		},
		SSH:             typed.SSH{Secret: "typed-ssh", Port: ptr.To(2200)},
		Launcher:        typed.OpenMPILauncher{Memory: ptr.To(resource.MustParse("1Gi"))},
		CustomResources: map[string]resource.Quantity{"rdma/hca": resource.MustParse("1")},
	}
	objs := render(t, g, p.Params())
	assert.NotContains(t, objs, "NetworkPolicy/typed")
	assert.NotContains(t, objs, "Secret/typed-ssh", "an existing Secret is not rendered")
	w := objs["Job/typed-worker"]
	assert.Contains(t, w, `"limits":{"cpu":"1500m","nvidia.com/gpu":1,"rdma/hca":"1"}`)
	assert.Contains(t, w, `{"name":"TS_INIT_TIMEOUT","value":"90"}`)
	assert.Contains(t, w, `{"emptyDir":{"medium":"Memory"},"name":"shm"}`)
	assert.Contains(t, objs["Job/typed-launcher"], `"limits":{"memory":"1Gi"}`)
}

func TestDurationsMustBeWholeSeconds(t *testing.T) {
	g := newGenerator(t)
	_, err := g.Render(context.Background(), generator.NewParams("openmpi").Set("initTimeout", 1500*time.Millisecond))
	assert.Equal(t, []string{`initTimeout: invalid value "1.5s": must be whole seconds from 1 to 86400, such as 300, 300s, 5m or 2h`},
		validationProblems(t, err))
}

func TestObjectParamsAreStrictlyDecoded(t *testing.T) {
	g := newGenerator(t)
	_, err := g.Render(context.Background(), generator.NewParams("openmpi").
		SetText("tolerations", "- key: a\n  operatr: Exists\n", "--tolerations").
		SetText("volumes", `[{"name":"x","emptyDir":{"medium":5}}]`, "--volumes"))
	problems := validationProblems(t, err)
	require.Len(t, problems, 2)
	assert.Contains(t, problems[0], `unknown field "[0].operatr"`)
	assert.Contains(t, problems[1], `--volumes`)
	assert.Contains(t, problems[1], `is not a valid core/v1 Volume list`)
	// a map where a list of objects belongs: said once, as "list"
	_, err = g.Render(context.Background(), generator.NewParams("openmpi").Set("volumeMounts", map[string]any{"a": 1}))
	problems = validationProblems(t, err)
	require.Len(t, problems, 1)
	assert.Contains(t, problems[0], `must be a list of core/v1 VolumeMount objects`)
}

func TestAliasesAndSpellings(t *testing.T) {
	g := newGenerator(t)
	for _, key := range []string{"ssh.secret", "secret"} {
		objs := render(t, g, generator.NewParams("openmpi").SetText(key, "mine", "--"+key))
		assert.Contains(t, objs["Job/openmpi-worker"], `"secretName":"mine"`, key)
	}
	// The Kubeflow prototype's names still work in params files, with a
	// warning that gives the new name.
	res, err := g.Render(context.Background(), generator.NewParams("openmpi").
		AddFile("f.yaml", []byte("secret: mine\ndownloadDataFrom: s3://b/in\ndownloadDataTo: /trainsonnet/data/in\n")))
	require.NoError(t, err)
	assert.Equal(t, []string{
		"f.yaml: downloadDataFrom: now called s3.downloadFrom; downloadDataFrom still works here, but rename it",
		"f.yaml: downloadDataTo: now called s3.downloadTo; downloadDataTo still works here, but rename it",
		"f.yaml: secret: now called ssh.secret; secret still works here, but rename it",
	}, res.Warnings[:3])
	// ... and, the prototype's values being in use, what differs from it
	// (its chart declaration).
	require.Len(t, res.Warnings, 5)
	assert.Contains(t, res.Warnings[3], "the Kubeflow openmpi prototype: the launcher is the Job <name>-launcher")
	// A flag alias in a params file that is not an old name is an error
	// that names the declared key.
	_, err = g.Render(context.Background(), generator.NewParams("openmpi").AddFile("f.yaml", []byte("gpus: 2\n")))
	assert.Equal(t, []string{`f.yaml: gpus: unknown parameter "gpus" for openmpi (params files use the declared names: write "gpu")`},
		validationProblems(t, err))
}

func TestListsOfTextTakeOneItemPerFlag(t *testing.T) {
	g := newGenerator(t)
	objs := render(t, g, generator.NewParams("openmpi").
		SetTexts("imagePullSecrets", []string{"a,b", "c"}, "--image-pull-secrets").
		SetTexts("nodeSelector", []string{"x=1", "y=2"}, "--node-selector").
		SetTexts("workers", []string{"2", "3"}, "--workers"))
	w := objs["Job/openmpi-worker"]
	assert.Contains(t, w, `"imagePullSecrets":[{"name":"a"},{"name":"b"},{"name":"c"}]`)
	assert.Contains(t, w, `"nodeSelector":{"x":"1","y":"2"}`)
	assert.Contains(t, w, `"completions":3`, "a scalar keeps the last value")
}

func TestUnknownPrototype(t *testing.T) {
	g := newGenerator(t)
	_, err := g.Render(context.Background(), generator.NewParams("openmip"))
	require.Error(t, err)
	assert.True(t, generator.IsValidation(err))
	assert.Equal(t, `unknown prototype "openmip" (did you mean "openmpi"?)`, err.Error())
}

func TestDescribeDataIsComplete(t *testing.T) {
	g := newGenerator(t)
	protos, err := g.Prototypes()
	require.NoError(t, err)
	for _, pr := range protos {
		for _, p := range param.Leaves(pr.Params) {
			assert.NotEmpty(t, p.Doc, "%s.%s", pr.Name, p.Path)
			assert.NotEmpty(t, p.Rule(), "%s.%s", pr.Name, p.Path)
			assert.Equal(t, p, pr.Param(p.Path))
		}
	}
}

func TestRenamedMemberOfAGroupInParamsFiles(t *testing.T) {
	g, err := generator.New(generator.Options{PrototypePaths: []string{"testdata/renamedproto"}})
	require.NoError(t, err)
	res, err := g.Render(context.Background(), generator.NewParams("renamed").
		AddFile("f.yaml", []byte("store:\n  sharename: data\n")))
	require.NoError(t, err)
	assert.Contains(t, string(res.Objects[0].JSON()), `"share":"data"`)
	assert.Equal(t, []string{
		"f.yaml: store.sharename: now called store.azure.shareName; store.sharename still works here, but rename it",
	}, res.Warnings)
	// Checked like the new key, named as the user wrote it.
	_, err = g.Render(context.Background(), generator.NewParams("renamed").
		AddFile("f.yaml", []byte("store:\n  sharename: Data\n")))
	problems := validationProblems(t, err)
	require.Len(t, problems, 1)
	assert.Contains(t, problems[0], `f.yaml: store.sharename: invalid value "Data"`)
}

// TestConflictsWithinOneSource checks that what one source says twice is
// an error naming both, never resolved by a guess: a key twice in one
// mapping, a second YAML document, a parameter under its old and its new
// name, a map key twice in one text. Between sources the later one wins
// (TestLaterSourcesReplaceEarlierOnes).
func TestConflictsWithinOneSource(t *testing.T) {
	g := newGenerator(t)
	renamed, err := generator.New(generator.Options{PrototypePaths: []string{"testdata/renamedproto"}})
	require.NoError(t, err)
	for _, c := range []struct {
		name  string
		g     *generator.Generator
		p     *generator.Params
		wants []string
	}{
		{"duplicate key in YAML", g, generator.NewParams("openmpi").AddFile("f.yaml", []byte("workers: 2\nworkers: 3\n")),
			[]string{`f.yaml: workers: given twice in one mapping, as 2 and as 3; keep one`}},
		{"duplicate key in JSON", g, generator.NewParams("openmpi").AddFile("f.json", []byte(`{"ssh": {"port": 2200, "port": 2300}}`)),
			[]string{`f.json: ssh.port: given twice in one mapping, as 2200 and as 2300; keep one`}},
		{"duplicate key in a map value", g, generator.NewParams("openmpi").AddFile("f.yaml", []byte("nodeSelector:\n  pool: a\n  pool: b\n")),
			[]string{`f.yaml: nodeSelector.pool: given twice in one mapping, as "a" and as "b"; keep one`}},
		{"duplicate key in an object in a list", g, generator.NewParams("openmpi").AddFile("f.yaml", []byte("volumes:\n- name: a\n  name: b\n  emptyDir: {}\n")),
			[]string{`f.yaml: volumes[0].name: given twice in one mapping, as "a" and as "b"; keep one`}},
		{"second document", g, generator.NewParams("openmpi").AddFile("f.yaml", []byte("workers: 2\n---\nworkers: 3\n")),
			[]string{"f.yaml: holds a second YAML document (after ---), which would be ignored: put every parameter in one document, or the second in a file of its own (-f)"}},
		{"old and new name of a group", g, generator.NewParams("horovod").AddFile("v.yaml", []byte("driver: {env: {A: '1'}}\nmaster: {env: {A: '2'}}\n")),
			[]string{"v.yaml: driver and master both set driver (master is its old name); give it once, as driver"}},
		{"old and new name of a group, other members", g, generator.NewParams("horovod").AddFile("v.yaml", []byte("driver: {env: {A: '1'}}\nmaster: {gpu: 1}\n")),
			[]string{"v.yaml: driver and master both set driver (master is its old name); give it once, as driver"}},
		{"old and new name at two depths", g, generator.NewParams("openmpi").AddFile("f.yaml", []byte("s3Secret: a\ns3: {secret: b}\n")),
			[]string{"f.yaml: s3.secret and s3Secret both set s3.secret (s3Secret is its old name); give it once, as s3.secret"}},
		{"old and new name of a member", renamed, generator.NewParams("renamed").AddFile("f.yaml", []byte("store:\n  sharename: a\n  azure: {shareName: b}\n")),
			[]string{"f.yaml: store.azure.shareName and store.sharename both set store.azure.shareName (store.sharename is its old name); give it once, as store.azure.shareName"}},
		{"map key twice in one text", g, generator.NewParams("openmpi").SetText("nodeSelector", "a=b,a=c", "--node-selector"),
			[]string{`--node-selector: invalid value "a=b,a=c": gives a twice, as a=b and as a=c; keep one`}},
		{"map key twice in a repeated flag", g, generator.NewParams("openmpi").SetTexts("nodeSelector", []string{"a=b", "a=c"}, "--node-selector"),
			[]string{`--node-selector: invalid value "a=b,a=c": gives a twice, as a=b and as a=c; keep one`}},
		{"key twice in an object's text", g, generator.NewParams("openmpi").SetText("tolerations", `[{"key":"a","key":"b"}]`, "--tolerations"),
			[]string{`--tolerations: invalid value "[{\"key\":\"a\",\"key\":\"b\"}]": [0].key: given twice in one mapping, as "a" and as "b"; keep one`}},
		{"customResources holds gpuResource", g, generator.NewParams("openmpi").SetText("gpu", "2", "--gpu").SetText("customResources", "nvidia.com/gpu=4", "--custom-resources"),
			[]string{`--custom-resources: invalid value "nvidia.com/gpu=4": holds nvidia.com/gpu, the gpuResource that gpu sets (it is also the slots of each worker): set it with gpu only`}},
		{"customResources holds cpu and memory beside cpu and memory", g, generator.NewParams("openmpi").
			SetText("cpu", "2", "--cpu").SetText("memory", "2Gi", "--memory").SetText("customResources", "cpu=4,memory=1Gi", "--custom-resources"),
			[]string{`--custom-resources: invalid value "cpu=4,memory=1Gi": holds cpu, which cpu sets too (2): set it once`,
				`--custom-resources: invalid value "cpu=4,memory=1Gi": holds memory, which memory sets too (2Gi): set it once`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.g.Render(context.Background(), c.p)
			if c.wants == nil {
				require.NoError(t, err)
				return
			}
			assert.Equal(t, c.wants, validationProblems(t, err))
		})
	}

	// Not conflicts: a trailing ---, an empty second document, and the
	// same key in two different mappings; customResources' cpu without cpu.
	for _, f := range []string{"workers: 2\n---\n", "---\nworkers: 2\n", "workers: 2\n---\n# nothing\n",
		"nodeSelector: {pool: a}\nlauncher: {nodeSelector: {pool: a}}\n", "customResources: {cpu: '2', example.com/fpga: 1}\n"} {
		_, err := g.Render(context.Background(), generator.NewParams("openmpi").AddFile("f.yaml", []byte(f)))
		assert.NoError(t, err, "%q", f)
	}
}

// TestObjectFromGoTypes: an object parameter set from Go with a map of
// Go types (float64, int32), as a caller's own decoding makes them, renders
// (the fuzzer found "no Jsonnet literal for a float64", a prototype failure).
func TestObjectFromGoTypes(t *testing.T) {
	g, err := generator.New(generator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.Render(t.Context(), generator.NewParams("horovod").Set("ssh.secret", "s").
		Set("driver.resources", map[string]any{"requests": map[string]any{"cpu": 3.0}, "limits": map[string]any{"nvidia.com/gpu": int32(2)}}))
	if err != nil {
		t.Fatal(err)
	}
	y, err := res.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(y), "-driver.horovod slots=2") {
		t.Errorf("the driver's GPUs are not its slots:\n%s", y)
	}
}

// TestDeclaredFormat: a format a prototype declares in Jsonnet
// (params.format) checks strings, list items and map keys and values like
// a built-in one, with its rule in describe, its message and its pattern
// in the schema; one name declared as two formats is refused at load.
func TestDeclaredFormat(t *testing.T) {
	g, err := generator.New(generator.Options{PrototypePaths: []string{"testdata/declproto"}})
	require.NoError(t, err)
	pr, err := g.Lookup("formatted")
	require.NoError(t, err)
	assert.Equal(t, "a branch or tag name such as v1.2", pr.Param("revision").Rule())
	assert.Equal(t, "items separated by commas (each a branch or tag name such as v1.2)", pr.Param("also").Rule())
	assert.Equal(t, "gitRef", pr.Param("pins").Format)
	schema, err := pr.JSONSchema()
	require.NoError(t, err)
	assert.Contains(t, string(schema), `"pattern": "^[A-Za-z0-9._/-]+$"`)

	objs := render(t, g, generator.NewParams("formatted").SetText("revision", "v1.2", "--revision").
		SetText("also", "a,b/c", "--also").SetText("pins", "web=v2", "--pins"))
	assert.Contains(t, objs["ConfigMap/formatted"], `"revision":"v1.2"`)
	assert.Contains(t, objs["ConfigMap/formatted"], `"web":"v2"`)

	_, err = g.Render(context.Background(), generator.NewParams("formatted").
		SetText("revision", "v 1", "--revision").
		AddFile("f.yaml", []byte("also: [ok, 'no way']\npins: {'a b': v1, c: averyveryverylongrevision}\n")))
	// (the first key at fault: "a b" before c's value, longer than 20)
	assert.Equal(t, []string{
		`--revision: invalid value "v 1": must be a branch or tag name such as v1.2`,
		`f.yaml: also: invalid value "[\"ok\",\"no way\"]": item "no way": must be a branch or tag name such as v1.2`,
		`f.yaml: pins: invalid value "{\"a b\":\"v1\",\"c\":\"averyveryverylongrevision\"}": key "a b": must be a branch or tag name such as v1.2`,
	}, validationProblems(t, err))

	_, err = g.Lookup("twice")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `format "tag" is declared twice, differently`)
}

// TestDeclaredRelations: params.atMost and atLeast hold a parameter to
// another when both are set, params.needs one to another when it is set, beside the prototype's own rules, named as
// the user wrote it; a relation that cannot hold is refused at load.
func TestDeclaredRelations(t *testing.T) {
	g, err := generator.New(generator.Options{PrototypePaths: []string{"testdata/declproto"}})
	require.NoError(t, err)
	render(t, g, generator.NewParams("related").SetText("pool.min", "4", "--pool-min"))
	_, err = g.Render(context.Background(), generator.NewParams("related").
		SetText("pool.min", "5", "--pool-min").AddFile("f.yaml", []byte("pool: {max: 3}\n")))
	assert.Equal(t, []string{
		`f.yaml: pool.max: invalid value "3": must be at least pool.min (5)`,
		`--pool-min: invalid value "5": must be at most workers (4): some would wait forever`,
	}, validationProblems(t, err))
	// needs: a value without the one it needs; the common workloadPriorityClass needs queue.
	_, err = g.Render(context.Background(), generator.NewParams("related").SetText("tier", "gold", "--tier"))
	assert.Equal(t, []string{`--tier: invalid value "gold": needs pool.min: a tier sizes the pool`}, validationProblems(t, err))
	render(t, g, generator.NewParams("related").SetText("tier", "gold", "--tier").SetText("pool.min", "2", "--pool-min"))
	_, err = g.Render(context.Background(), generator.NewParams("related").AddFile("f.yaml", []byte("workloadPriorityClass: high\n")))
	assert.Equal(t, []string{`f.yaml: workloadPriorityClass: invalid value "high": needs queue: only a queued job has a Kueue priority`}, validationProblems(t, err))
	render(t, g, generator.NewParams("related").AddFile("f.yaml", []byte("workloadPriorityClass: high\nqueue: team-a\n")))
	// With workers invalid, a rule that names it is not reported.
	_, err = g.Render(context.Background(), generator.NewParams("related").
		SetText("pool.min", "5", "--pool-min").SetText("workers", "0", "--workers"))
	assert.Equal(t, []string{`--workers: invalid value "0": must be an integer from 1 to 2147483647`}, validationProblems(t, err))

	// unlessZero: deepspeed's slots are at most its GPUs, any number on CPU
	ds, err := generator.New(generator.Options{})
	require.NoError(t, err)
	render(t, ds, generator.NewParams("deepspeed").SetText("gpu", "0", "--gpu").SetText("slots", "16", "--slots"))
	_, err = ds.Render(context.Background(), generator.NewParams("deepspeed").SetText("gpu", "8", "--gpu").SetText("slots", "16", "--slots"))
	assert.Equal(t, []string{`--slots: invalid value "16": must be at most gpu (8) while gpu is not 0: deepspeed gives each slot a GPU of its own`}, validationProblems(t, err))

	_, err = g.Lookup("badrelation")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `parameter "label": atMost relates ints or seconds, not a string`)
}
