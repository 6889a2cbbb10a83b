package generator_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trainsonnet/trainsonnet/generator"
)

// TestBashSyntaxWarning pins roles.bashSyntax (lib/roles.libsonnet): a
// command run with sh -c that uses bash syntax gets a warning naming it;
// POSIX commands that look alike get none.
func TestBashSyntaxWarning(t *testing.T) {
	g, err := generator.New(generator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ exec, want string }{
		{"mpirun -np 4 hostname", ""},
		{"if [[ -f x ]]; then echo; fi", "[[ ]]"},
		{"if [ -f x ]; then . ./env; fi", ""},
		{"source /etc/profile && mpirun x", "source"},
		{"python train.py --source /data", ""},
		{"echo source of truth", ""},
		{"function f { echo; }; f", "function NAME"},
		{"f() { echo; }; f", ""},
		{"a=(1 2 3); echo $a", "an array"},
		{`python -c "f(x=(1,2))"`, ""},
		{"for i in {1..4}; do echo $i; done", "brace range"},
		{"find . -exec echo {} +", ""},
		{"diff <(ls a) <(ls b)", "process substitution"},
		{"cmd &> /tmp/log", "&>"},
		{"cmd >/tmp/log 2>&1 &", ""},
		{"cmd |& tee x", "|&"},
		{"(( i++ ))", "(( ))"},
		{"echo $((1+2)) $(( $a * 2 ))", ""},
		{"echo ${x:-def} ${y:=1} ${#z} ${w%.txt}", ""},
		{"echo ${y:1:2}", "${var:offset}"},
		{"echo ${x//a/b}", "${var/pattern/...}"},
		{"${", ""},
		{"{", ""},
		{"((", "(( ))"},
	} {
		res, err := g.Render(context.Background(), generator.NewParams("openmpi").Set("ssh.secret", "s").Set("exec", c.exec))
		if err != nil {
			t.Fatalf("%q: %v", c.exec, err)
		}
		var got string
		for _, w := range res.Warnings {
			if strings.HasPrefix(w, "exec is run with sh -c") {
				got = w
			}
		}
		switch {
		case c.want == "" && got != "":
			t.Errorf("%q: warned %q", c.exec, got)
		case c.want != "" && !strings.Contains(got, c.want):
			t.Errorf("%q: warning %q, want one naming %s", c.exec, got, c.want)
		}
	}
}

// TestAliasesCountAsTheReplacedSystemsKeys: an alias of the replaced
// system's (openmpi's --secret, Kubeflow's) brings in what its system
// did, however it is given: flag, --set or a Go caller's text.
func TestAliasesCountAsTheReplacedSystemsKeys(t *testing.T) {
	g := newGenerator(t)
	for _, p := range []*generator.Params{
		generator.NewParams("openmpi").SetTexts("secret", []string{"s"}, "--secret"),
		generator.NewParams("openmpi").SetText("secret", "s", "--set secret"),
	} {
		res, err := g.Render(context.Background(), p)
		require.NoError(t, err)
		assert.Contains(t, strings.Join(res.Warnings, "\n"), "the Kubeflow openmpi prototype: the launcher is the Job")
	}
	res, err := g.Render(context.Background(), generator.NewParams("openmpi").SetText("ssh.secret", "s", "--set ssh.secret"))
	require.NoError(t, err)
	assert.NotContains(t, strings.Join(res.Warnings, "\n"), "the Kubeflow openmpi prototype", "the declared path is no key of Kubeflow's")
}
