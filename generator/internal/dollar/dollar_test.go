package dollar

import (
	"reflect"
	"testing"

	_ "github.com/trainsonnet/trainsonnet/internal/goldentest" // accept the module-wide -update flag
)

// TestRoundTrip: a user's $ marked on the way in comes out as $$ where the
// kubelet expands (a container's command, args and env values, at any
// depth) and as $ elsewhere; a prototype's own $ is left alone.
func TestRoundTrip(t *testing.T) {
	user := MarkIn("echo $HOME").(string)
	if !In("a$b") || In("ab") || Marked("a$b") || !Marked(user) {
		t.Fatal("In and Marked do not tell the texts apart")
	}
	if Unmark(user) != "echo $HOME" {
		t.Fatalf("Unmark: %q", Unmark(user))
	}
	obj := map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{"note": user}},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{
				"command": []any{"sh", "-c", user},
				"args":    []any{"--task_id=$(TASKID)"},
				"env":     []any{map[string]any{"name": "X", "value": user}},
			}},
		}}},
	}
	Escape(obj)
	want := map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{"note": "echo $HOME"}},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{
				"command": []any{"sh", "-c", "echo $$HOME"},
				"args":    []any{"--task_id=$(TASKID)"},
				"env":     []any{map[string]any{"name": "X", "value": "echo $$HOME"}},
			}},
		}}},
	}
	if !reflect.DeepEqual(obj, want) {
		t.Errorf("got  %v\nwant %v", obj, want)
	}
	if got := MarkIn(map[string]string{"K": "$v"}).(map[string]string); got["K"] != Mark+"v" {
		t.Errorf("MarkIn of a map: %q", got)
	}
}
