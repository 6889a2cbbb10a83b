// trainsonnet: the entry point of every prototype.
//
// Needs:    nothing; its natives (generator/internal/eval/natives.go) when trainsonnet runs
//           it, Jsonnet fallbacks under the stock jsonnet binary.
// Declares: no parameter; ts.params is lib/params.libsonnet, the
//           constructors every declaration is made with, and
//           ts.declare(piece, decls) makes a piece's declarations its own
//           (a name declared by two pieces fails, naming both).
// Returns:  ts.prototype(spec) the function trainsonnet evaluates; ts.check
//           a problem of validate(p); ts.warn(o, warnings) an object that
//           carries warnings; ts.fail(message) an error of the
//           prototype's author, reported as "prototype <name>: <message>"
//           without a trace; the per-worker and text helpers
//           (indexedLines, indexedList, contains, bytes, bashSyntax), the
//           asset seam (asset, assetBytes) and generated secrets
//           (sshKeyPair, secretToken).
//
//   local ts = import 'trainsonnet.libsonnet';
//   ts.prototype({
//     name: 'openmpi', summary: '...', description: '...',
//     params: { workers: ts.params.int('Worker pods.', default=4, min=1) },
//     validate(p):: [ts.check(p.workers < 10, 'workers', 'must be below 10')],
//     warnings(p):: [],
//     removed: { 'ssh.hostKey': 'what to do instead' },  // old keys, ignored with a warning
//     spellings: ts.params.chartSpellings,  // the replaced chart's spellings of values, taken with a warning
//     chart: {                       // the replaced chart's values in use (any of keys given):
//       name: 'the eval-tensorflow chart', keys: ['traindir', 'storage.sharename'],
//       defaults: { gpu: { value: 1, why: 'it gave the evaluator one GPU' } },  // taken when not set
//       differs: { serviceType: 'what differs, and how to get the chart\'s' },  // said when not set
//       notes: ['what else differs on purpose'],                                // said
//     },
//     from: {  // whole objects of the replaced system a params file may be (generator/keys.go)
//       'kubeflow.org/v1/PyTorchJob': function(o) {
//         params: { workers: ... },                  // derived from o
//         warnings: ['what differs, and why'],
//         errors: [[{ field: 'spec.x', rule: '...' }], [{ param: 'exec', rule: 'not derived: ...' }]],
//         fields: { workers: 'spec.x.replicas' },   // where each came from, for messages
//       },
//     },
//     render(p):: [ ...objects... ],
//   })
//
// ts.prototype returns function(params={}, output='objects'). trainsonnet
// passes checked, complete params and output='full'; by hand,
//   jsonnet -J lib --tla-code params='{workers: 2}' prototypes/openmpi.jsonnet
// prints the objects (output='yaml' with -S prints a YAML stream).

local params = import 'params.libsonnet';

// Natives registered by trainsonnet (their registry: generator/internal/eval/natives.go);
// null under the stock jsonnet binary, where the Jsonnet fallbacks below
// take over.
local nativeLines = std.native('indexedLines');
local nativeLinesBytes = std.native('indexedLinesBytes');
local nativeList = std.native('indexedList');
local nativeBashSyntax = std.native('bashSyntax');
local nativeKeyPair = std.native('sshKeyPair');
local nativeToken = std.native('secretToken');
local nativeHandOver = std.native('handOver');
local nativeAsset = std.native('asset');
local nativeAssetBytes = std.native('assetBytes');

// The mark that starts the message of fail (U+FDD1, a Unicode
// noncharacter): trainsonnet reports such an error as its message alone
// (generator/internal/eval/fail.go).
local failMark = '\uFDD1';
// Registered by trainsonnet for renders: see checks.
local skipChecks = std.native('skipContractChecks');
local fail(message) = error failMark + message;
// list(what, of, v): v, a list that what (a function of the prototype's
// spec) returned, or its author's error.
local list(what, of, v) =
  if std.isArray(v) then v
  else fail(what + ' must return a list of ' + of + ', not ' + (if v == null then 'null' else if std.isObject(v) then 'an object' else 'a ' + std.type(v)));
// The hidden field of an object by which a piece of the library warns
// about what it made (warn).
local warningsField = 'trainsonnetWarnings';

{
  params:: params,

  prototype(spec)::
    local s = { description: '', replaces: null, removed: {}, chart: null, spellings: [], ownEnv: {}, from: {}, validate(p):: [], warnings(p):: [] } + spec;
    function(params={}, output='objects')
      if output == 'spec' then {
        name: s.name,
        summary: s.summary,
        description: s.description,
        [if s.replaces != null then 'replaces']: s.replaces,
        params: if s.spellings == [] then s.params else $.params.spelled(s.params, s.spellings),
        // the piece that declares each parameter (ts.declare), for the
        // typed Go structs (generator/typed): a spec is read at build time
        // only, so renders never pay for it
        owners: { [k]: s.params[k].owner for k in std.objectFields(s.params) if std.objectHasAll(s.params[k], 'owner') },
        removed: s.removed,
        [if s.chart != null then 'chart']: { defaults: {}, differs: {}, notes: [] } + s.chart,
        ownEnv: $.ownEnv + s.ownEnv,
        from: std.objectFields(s.from),
      }
      else if output == 'from' then
        // trainsonnet passes {kind, object}: a whole object of the
        // replaced system, given as a params file (generator/keys.go).
        local m = { params: {}, warnings: [], errors: [], fields: {} } + s.from[params.kind](params.object);
        { params: m.params, warnings: [w for w in m.warnings if w != null], errors: std.join([], m.errors), fields: m.fields }
      else
        // trainsonnet passes complete, checked params (output='full'); by
        // hand, missing ones take their defaults.
        local p = if output == 'full' then params else $.params.withDefaults(s.params, params);
        local errors = std.join([], [list('validate(p)', 'lists of problems (ts.check)', e) for e in list('validate(p)', 'lists of problems (ts.check)', s.validate(p))]);  // native, unlike std.flattenArrays
        local objects() = [o for o in list('render(p)', 'objects', s.render(p)) if o != null];
        if output == 'full' then
          local objs = if errors == [] then objects() else [];
          local full = {
            errors: errors,
            warnings: if errors == [] then [w for w in list('warnings(p)', 'texts', s.warnings(p)) if w != null] + std.join([], [std.get(o, warningsField, []) for o in objs]) else [],
            objects: objs,
          };
          // trainsonnet takes this value as Go values: printing it as JSON
          // text for Go to parse it again would cost more than the rest of
          // the hand-over (generator/internal/eval/engine.go). Printed, it is the same.
          if nativeHandOver != null then nativeHandOver(full) else full
        else if errors != [] then error std.join('\n', [e.param + ': ' + e.rule for e in errors])
        else if output == 'objects' then objects()
        else if output == 'yaml' then std.manifestYamlStream(objects(), quote_keys=false)
        else error "output must be 'objects', 'yaml', 'spec', 'from' or 'full'",

  // ownEnv: the environment variables the job's own machinery reads,
  // which no env parameter (a map with keys='envName') may set: a name,
  // or a prefix and *, with why (said after "variable X is the job's
  // own: "). Every prototype has these; a prototype adds those of its
  // own commands with ownEnv: {...} in its spec (mpi.ownEnv for the MPI
  // ones). A variable the prototype sets itself in a container needs no
  // entry: the pod check refuses a user's second value of it.
  ownEnv:: {
    'TS_*': "the pods' runtime (lib/assets/runtime.sh) reads it; what it sets is a parameter",
    'TRAINSONNET_*': "trainsonnet's",
    JOB_COMPLETION_INDEX: "the Job controller gives each pod of an Indexed Job its index there, and keeps a value in the pod template: every pod would have yours",
  },

  // warn(o, warnings): the object o, carrying warnings (texts) about it
  // that trainsonnet prints beside the prototype's own (in a hidden field,
  // never in the output): how a piece of the library that makes objects
  // (roles.objects) says what the user should know of them.
  warn(o, warnings):: o + { [warningsField]:: warnings },

  // check returns a problem with param when ok is false; validate(p)
  // returns a list of these lists.
  check(ok, param, rule):: if ok then [] else [{ param: param, rule: rule }],

  // fail(message): stops the evaluation, for a piece of the library (or
  // of a prototype) used wrongly: a bug of the prototype's author, not of
  // the user's input. trainsonnet reports it as "prototype <name>:
  // <message>" (exit 1) without a Jsonnet stack trace, so the message
  // says which piece is missing or wrong and what to add: "roles.objects:
  // role worker is a Job, ...: add batch.params('the workers') to the
  // prototype's params". The stock jsonnet binary prints it as any error.
  fail(message):: fail(message),

  // checks: whether the pieces check that p has what they read (the
  // common, Job lifetime and storage parameters) and fail with ts.fail
  // otherwise. A render skips them (they cost about 5%): when one fails,
  // trainsonnet evaluates it again with them, and reports the piece that
  // is missing instead of the Jsonnet error (generator/internal/eval/fail.go). On
  // under the stock jsonnet binary. What would pass silently (an unknown
  // role field, a job without a lead) is checked in every render.
  checks:: skipChecks == null || !skipChecks(),

  // has(o, f): whether the object o has the field f (hidden or not), as
  // std.objectHas answers but without its cost: go-jsonnet builds the map
  // of all o's fields to answer std.objectHas, and p has a hundred. The
  // pieces' contract checks ask it of p in every render.
  has(o, f):: (o + { h:: f in super }).h,

  // declare(piece, decls): the parameter declarations decls of a piece
  // (common.params, roles.params, ...), each owned by piece. A parameter
  // has one owner: composed with +, two pieces that declare the same name
  // fail, naming both, wherever the later one sits (a group included).
  // After them, a prototype's own object may still refine one
  // (env+: {doc: ...}) or replace it: that is the prototype's choice.
  declare(piece, decls):: {
    [k]:
      if k in super then
        local first = if std.objectHasAll(super[k], 'owner') then super[k].owner else 'an earlier object';
        fail(piece + ' declares the parameter ' + k + ', which ' + first + ' declares too: a parameter has one owner; leave one of them out, or refine the first with ' + k + '+: {...}')
      else decls[k] + { owner:: piece }
    for k in std.objectFields(decls)
  },

  // indexedLines(prefix, suffix, from, to, head=''): head, then
  // prefix + i + suffix + "\n" for every i in [from, to). Built in Go under
  // trainsonnet, because work per worker in Jsonnet grows with the job, and
  // kept there: the prototype gets a reference to place as a whole value of
  // a ConfigMap's data (anywhere else it is a prototype bug), not to inspect
  // or join to other text; pass head for what comes first.
  // indexedLinesBytes gives its length.
  indexedLines(prefix, suffix, from, to, head='')::
    if nativeLines != null then nativeLines(head, prefix, suffix, from, to)
    else head + std.join('', [prefix + i + suffix + '\n' for i in std.range(from, to - 1)]),

  // indexedList(prefix, suffix, sep, from, to): prefix + i + suffix for
  // every i in [from, to), joined by sep, such as a list of hosts. Built in
  // Go under trainsonnet, like indexedLines, and as opaque: a whole value
  // of a ConfigMap's data.
  indexedList(prefix, suffix, sep, from, to)::
    if nativeList != null then nativeList(prefix, suffix, sep, from, to)
    else std.join(sep, [prefix + i + suffix for i in std.range(from, to - 1)]),

  // contains(s, sub): whether the text s holds sub. std.findSubstr is
  // written in Jsonnet and tries every position: 7 ms for a command line
  // of 100 characters; std.strReplace is built into the interpreter.
  contains(s, sub):: std.strReplace(s, sub, '') != s,

  // bytes(q): a quantity of bytes, as trainsonnet normalizes it (4Gi,
  // 3750M, 1500000000, 15e8), as a number.
  bytes(q)::
    local units = { '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18, Ki: 1024, Mi: 1048576, Gi: 1073741824, Ti: 1099511627776, Pi: 1125899906842624, Ei: 1152921504606846976 };
    local digits = std.rstripChars(q, 'kKMGTPEi');
    local unit = std.substr(q, std.length(digits), std.length(q) - std.length(digits));
    local e = std.splitLimit(digits, 'e', 1);
    if std.length(e) == 2 then std.parseInt(e[0]) * std.pow(10, std.parseInt(e[1]))
    else std.parseInt(digits) * units[unit],

  // bashSyntax(cmd): the first construct of bash that POSIX sh lacks in
  // the command cmd, in words, or null (generator/internal/eval/bashsyntax.go). A scan
  // of text, done in Go; the stock jsonnet binary finds nothing.
  bashSyntax(cmd):: if nativeBashSyntax != null then nativeBashSyntax(cmd) else null,

  // asset(path, content): a file the pods need verbatim, as a whole value
  // of a ConfigMap's data: asset('assets/mpi.sh', importstr 'assets/mpi.sh').
  // trainsonnet puts the file at path in the output without passing its
  // content through Jsonnet (content is never evaluated); the stock jsonnet
  // binary gets content.
  asset(path, content):: if nativeAsset != null then nativeAsset(path) else content,

  // assetBytes(path, content): the size of that file in bytes (its length
  // under the stock binary, the same for ASCII scripts). Under trainsonnet
  // it is known in Go, where std.length would convert the whole text.
  assetBytes(path, content):: if nativeAssetBytes != null then nativeAssetBytes(path) else std.length(content),

  // indexedLinesBytes(prefix, suffix, from, to, head=''): the length of
  // indexedLines with the same arguments, without building it.
  indexedLinesBytes(prefix, suffix, from, to, head='')::
    if nativeLinesBytes != null then nativeLinesBytes(head, prefix, suffix, from, to)
    else std.length($.indexedLines(prefix, suffix, from, to, head)),

  // sshKeyPair(comment): a fresh ed25519 key pair {privateKey, publicKey},
  // generated by trainsonnet at render time.
  sshKeyPair(comment)::
    if nativeKeyPair != null then nativeKeyPair(comment)
    else error 'generating an ssh key needs trainsonnet (or pass the name of an existing ssh Secret)',

  // secretToken(what): a fresh random token (26 base32 characters),
  // generated by trainsonnet at render time. what names the Secret
  // parameter that avoids it, for the error under the stock jsonnet.
  secretToken(what)::
    if nativeToken != null then nativeToken()
    else error 'generating a token needs trainsonnet (or pass the name of an existing Secret with ' + what + ')',
}
