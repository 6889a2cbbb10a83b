// Package param is trainsonnet's parameter system: the typed declarations
// a prototype makes in Jsonnet (Decl, built into Param trees by Build), how
// a value of each type is read (ReadText for text, ReadTexts for a
// repeated flag, Read for a decoded or Go value, each in the declared
// type or one of the declaration's Spellings, spelling.go; ReadFile for a
// params file), the rules it must follow (formats, the prototype's own
// among them, bounds, declared relations, the API server's rules for
// pass-through objects and resources), their words (Rule) and their JSON
// Schema (Schema, GroupSchema), and the one kind of problem: Error.
//
// It knows nothing of prototypes, Jsonnet or flags: package generator
// applies sources of values to a prototype's declarations with it, and the
// CLI spells parameters as flags.
package param
