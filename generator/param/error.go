package param

// Error is one problem with one parameter value.
type Error struct {
	// Param is the declared path of the parameter ("ssh.port"), or the
	// unknown key as given.
	Param string
	// Source names the input the value came from, as the caller labelled
	// it ("--node-selector", "--set ssh.port", "values.yaml: ssh.port");
	// empty when no input set the parameter (its default broke a rule).
	Source string
	// Value is the offending value as text; empty for unknown parameters.
	Value string
	// Rule is what the value must be, or what is wrong.
	Rule string
}

func (e *Error) Error() string {
	where := e.Source
	if where == "" {
		where = e.Param
	}
	if e.Value == "" {
		return where + ": " + e.Rule
	}
	return where + ": invalid value " + e.Value + ": " + e.Rule
}
