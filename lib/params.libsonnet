// Parameter declarations.
//
// A prototype declares each parameter once, with one of these constructors;
// trainsonnet derives everything else from that declaration: the CLI flags
// (kebab-case and the declared camelCase spelling), params files, --set,
// `describe`, `schema`, validation and the typed Go structs of the generator
// package. The Go side reads the plain objects built here
// (generator/param/param.go, type Decl).
//
// Common options of every constructor:
//   doc      what the parameter does (required; shown by describe and --help)
//   aliases  extra flag spellings, such as the name the replaced system used
//   replaces the dotted path the replaced system used for it (its values
//            file, its flags): still accepted there, with a warning
//
// A declaration may also carry spellings: [...] (+ { spellings: [...] }):
// other ways of writing its value that it takes, with a warning, because
// the replaced system wrote values so (chartSpellings below; a prototype
// gives all its parameters the same with spellings in ts.prototype).

local int32Max = 2147483647;

local base(type, doc, default, aliases, replaces) =
  { type: type, doc: doc, default: default }
  + (if aliases == [] then {} else { aliases: aliases })
  + (if replaces == null then {} else { replaces: replaces });

{
  // Text. format names a check (generator/format): nonEmpty, dns1035Label,
  // dns1123Label, dns1123Subdomain, labelKey, userLabelKey,
  // userAnnotationKey, labelValue, resourceName, envName, image, imageTag,
  // imageRepository, absPath, s3URI, ... (trainsonnet describe lists each
  // parameter's in words), or is a format of the prototype's own, made
  // with format below.
  string(doc, default=null, format='', aliases=[], replaces=null)::
    base('string', doc, default, aliases, replaces) + { format: format },

  // An integer, bounded (inclusive). The upper bound defaults to the
  // largest int32, which is what most Kubernetes fields hold.
  int(doc, default=null, min=null, max=int32Max, aliases=[], replaces=null)::
    base('int', doc, default, aliases, replaces)
    + (if min == null then {} else { min: min })
    + { max: max },

  bool(doc, default=false, aliases=[], replaces=null)::
    base('bool', doc, default, aliases, replaces),

  // One of a fixed set of strings.
  enum(doc, values, default=null, aliases=[], replaces=null)::
    base('enum', doc, default, aliases, replaces) + { values: values },

  // A Kubernetes quantity (500m, 2, 4Gi), normalized to its canonical form.
  // unit='bytes' asks for a whole number of bytes (memory, storage).
  quantity(doc, default=null, unit='', aliases=[], replaces=null)::
    base('quantity', doc, default, aliases, replaces) + { format: unit },

  // Whole seconds; users may write 300, 300s, 5m or 2h (one unit). The prototype gets a
  // number, at most the largest int32 unless max says otherwise.
  seconds(doc, default=null, min=null, max=int32Max, aliases=[], replaces=null)::
    base('duration', doc, default, aliases, replaces)
    + (if min == null then {} else { min: min })
    + { max: max },

  // String keys to string values (or quantities: values='quantity').
  // On the command line: key=value pairs separated by commas.
  map(doc, keys='', values='', default={}, aliases=[], replaces=null)::
    base('map', doc, default, aliases, replaces) + { format: keys, valueFormat: values },

  // A list of distinct strings, each checked against items (a string
  // format), or of distinct integers (items='int', within min and max).
  // On the command line: items separated by commas, or, with
  // separator='', one item per flag (for text that holds commas, such as
  // the arguments of a command).
  list(doc, items='', default=[], min=null, max=null, separator=',', aliases=[], replaces=null)::
    base('list', doc, default, aliases, replaces) + { format: items }
    + (if min == null then {} else { min: min })
    + (if max == null then {} else { max: max })
    + (if separator == ',' then {} else { separator: separator }),

  // Structured pass-through, strictly checked against a k8s.io/api type
  // such as 'core/v1.Volume'; list=true for a list of them.
  object(doc, kind, list=false, default=null, aliases=[], replaces=null)::
    base('object', doc, if default == null && list then [] else default, aliases, replaces)
    + { kind: kind, list: list },

  // A nested set of parameters: a map in a params file, dotted flags
  // (--ssh.port, --ssh-port) on the command line.
  group(doc, params, replaces=null)::
    { type: 'group', doc: doc, params: params }
    + (if replaces == null then {} else { replaces: replaces }),

  // A format of the prototype's own, for what a pattern says: its name
  // (camelCase, not one of the built-in ones), the values it takes in
  // words (a value that breaks it "must be" that), a pattern (RE2, as Go's
  // regexp matches: anywhere in the value unless anchored with ^ and $; the
  // JSON Schema carries it as is, so keep to the syntax both share), at
  // most maxLength characters, and examples of valid values. Use it as
  // format= of a string, items= of a list, keys= or values= of a map:
  //   local gitRef = params.format('gitRef', 'a branch or tag name such as v1.2', '^[A-Za-z0-9._/-]+$', maxLength=255);
  //   revision: params.string('The revision to check out.', format=gitRef),
  // The sweep of test/e2e draws values from the pattern (and the examples).
  format(name, rule, pattern, maxLength=null, examples=[])::
    { name: name, rule: rule, pattern: pattern }
    + (if maxLength == null then {} else { maxLength: maxLength })
    + (if examples == [] then {} else { examples: examples }),

  // A relation of an int (or seconds) parameter to another, added to its
  // declaration: params.int(...) + params.atMost('workers', why). When both
  // are set, its value must be at most (atLeast: at least) the other's:
  // trainsonnet checks it beside the prototype's validate ("must be at
  // most workers (4): why"; the stock jsonnet binary does not), describe
  // shows it, and the sweep of test/e2e draws values that keep it.
  // unlessZero: the relation holds whatever the value while the other is
  // 0 (slots at most gpu, any number without GPUs).
  atMost(param, why='', unlessZero=false):: { atMost: { param: param, why: why } + (if unlessZero then { unlessZero: true } else {}) },
  atLeast(param, why='', unlessZero=false):: { atLeast: { param: param, why: why } + (if unlessZero then { unlessZero: true } else {}) },

  // A parameter that means nothing without another one, added to its
  // declaration: params.string(...) + params.needs('queue', why). A value
  // given without the other one is refused ("needs queue: why"), whatever
  // the type: both must be unset (null) by default.
  needs(param, why=''):: { needs: { param: param, why: why } },

  // The other ways the Helm charts' values files wrote values, which a
  // prototype that replaces a chart takes with a warning
  // (generator/param/spelling.go): "" for unset (blankIsUnset), quoted
  // numbers and booleans (quotedScalars), bytes as 2GB (byteUnits, on
  // the command line too) and {} for an empty list (emptyMapList).
  chartSpellings:: ['blankIsUnset', 'quotedScalars', 'byteUnits', 'emptyMapList'],

  // spelled(decls, spellings): every declaration in decls (in groups too)
  // takes spellings, but those that declare spellings of their own.
  spelled(decls, spellings):: {
    [k]:
      local d = decls[k];
      if d.type == 'group' then d { params: $.spelled(d.params, spellings) }
      else if std.objectHas(d, 'spellings') then d
      else d { spellings: spellings }
    for k in std.objectFields(decls)
  },

  // Marks every declaration in an object as common to all prototypes, so
  // describe can list them apart.
  common(params):: {
    [k]: params[k] + (if params[k].type == 'group' then {} else { common: true })
    for k in std.objectFields(params)
  },

  // withDefaults fills in every parameter the caller left out or null, so a
  // prototype can be run by hand with the stock jsonnet binary and partial
  // params. (trainsonnet itself always passes complete, checked params.)
  withDefaults(decls, given)::
    local unknown = [k for k in std.objectFields(given) if !std.objectHas(decls, k)];
    if unknown != [] then error 'unknown parameter(s): ' + std.join(', ', unknown)
    else {
      [k]:
        local d = decls[k];
        local v = if std.objectHas(given, k) then given[k] else null;
        if d.type == 'group' then $.withDefaults(d.params, if v == null then {} else v)
        else if v == null then d.default
        else v
      for k in std.objectFields(decls)
    },
}
