// mpi: Open MPI over ssh (openmpi, horovod, horovod-dask): the building
// block of a launcher over ssh (sshjob.libsonnet, all of whose fields mpi
// has too), with what Open MPI needs on top: its settings as env of the
// launcher (OMPI_MCA_* and PRRTE's PRTE_MCA_*, the user's mca among them),
// hwloc kept off X displays, running as root allowed, and the variables
// only Open MPI may set (ownEnv).
//
// Needs:    what sshjob.jobs needs, mpi.params, and the prototype's mca.
// Declares: mpi.params — shmSize, launcherGrace (sshjob.params in Open
//           MPI's words, owned by mpi.params), and the doc of
//           common.params' env in an MPI job (so after common.params).
// Returns:  sshjob's fields; jobs(proto, p, j): sshjob.jobs with Open MPI's
//           env, the launcher's name given as role; ompiEnv(mca); ownEnv.

local sshjob = import 'sshjob.libsonnet';

local hostfilePath = sshjob.hostfilePath;
local sshConfigPath = sshjob.sshConfigPath;

// Interfaces MPI must not use between pods: loopback, and the bridges and
// tunnels of container runtimes and CNI plugins, which a pod in its node's
// network sees (Open MPI takes names, not patterns).
local ifExclude = 'lo,docker0,cni0,flannel.1,tunl0,vxlan.calico,cilium_host,cilium_net,cilium_vxlan,kube-ipvs0,kube-bridge,weave,virbr0';
// Open MPI 4 (ORTE) reads OMPI_MCA_<name>: these, with the user's --mca.
local ompiDefaults = {
  orte_keep_fqdn_hostnames: 'true',
  orte_default_hostfile: hostfilePath,
  plm_rsh_args: '-F ' + sshConfigPath,
  btl_tcp_if_exclude: ifExclude,
  hwloc_base_binding_policy: 'none',
  rmaps_base_mapping_policy: 'slot',
};
// Open MPI 5 runs its daemons with PRRTE, which ignores the ORTE names
// above and reads PRTE_MCA_<name>: the same settings (the user's --mca of
// them too) under its names. btl_tcp_if_exclude is still Open MPI's own.
local prteNames = {
  hwloc_base_binding_policy: 'hwloc_default_binding_policy',
  orte_default_hostfile: 'prte_default_hostfile',
  orte_keep_fqdn_hostnames: 'prte_keep_fqdn_hostnames',
  plm_rsh_args: 'plm_ssh_args',
  rmaps_base_mapping_policy: 'rmaps_default_mapping_policy',
};
local prteEnv(all) = std.sort([
  { name: 'PRTE_MCA_' + prteNames[k], value: all[k] }
  for k in std.objectFields(prteNames)
  if std.objectHas(all, k)
], function(e) e.name);
local ompiRoot = [
  { name: 'OMPI_ALLOW_RUN_AS_ROOT', value: '1' },
  { name: 'OMPI_ALLOW_RUN_AS_ROOT_CONFIRM', value: '1' },
];
// hwloc, which Open MPI's mpirun and orted run at start, has a GL plugin
// that probes X displays :0 to :63 at TCP ports 6000-6063 of localhost,
// and waits forever on whatever listens there and is no X server:
// TensorBoard's default port 6006 in the same pod (horovod-dask), or on
// the node with host network. Nothing in a training pod needs GL
// discovery. The ranks' hosts get it through TS_SSH_ENV, as orted starts
// over ssh; a user's own HWLOC_COMPONENTS replaces it.
local hwlocName = 'HWLOC_COMPONENTS';
local hwlocEnv = [{ name: hwlocName, value: '-gl' }];
local hwlocOf(env) = if std.member([e.name for e in env], hwlocName) then [] else hwlocEnv;

local ompiDefaultEnv = [{ name: 'OMPI_MCA_' + k, value: ompiDefaults[k] } for k in std.objectFields(ompiDefaults)] + prteEnv(ompiDefaults) + ompiRoot;

sshjob + {
  // params: sshjob.params in Open MPI's words.
  params:: sshjob.params('the launcher and the workers', 'NCCL and Open MPI\'s shared-memory transport', 'the processes mpirun starts there', 'mpi.params', 'an MPI job'),

  // jobs: sshjob.jobs, the launcher named by role (launcher, driver,
  // scheduler), with Open MPI's env: on the launcher its settings (mca),
  // in every pod hwloc's, which ssh sessions get too.
  jobs(proto, p, j)::
    local l = j.launcher, w = j.worker;
    local lHwloc = hwlocOf(if 'env' in l then l.env else []), wHwloc = hwlocOf(if 'env' in w then w.env else []);
    sshjob.jobs(proto, p, j + {
      launcher: l + {
        role:: null,
        name: l.role,
        ownEnv: $.ompiEnv(p.mca) + lHwloc + (if 'ownEnv' in l then l.ownEnv else []),
        sshNames: [e.name for e in lHwloc] + (if 'sshNames' in l then l.sshNames else []),
      },
      worker: w + {
        ownEnv: (if 'ownEnv' in w then w.ownEnv else []) + wHwloc,
        sshNames: (if 'sshNames' in w then w.sshNames else []) + [e.name for e in wHwloc],
      },
    }),

  // ownEnv: the variables of Open MPI that its prototypes' ownEnv adds
  // to the library's (ts.ownEnv): trainsonnet sets them, or mca does.
  ownEnv:: {
    'OMPI_MCA_*': 'Open MPI reads it as a parameter of its own: set Open MPI parameters with --mca NAME=VALUE',
    'PRTE_MCA_*': "Open MPI's runtime (PRRTE) reads it as a parameter of its own: set Open MPI parameters with --mca NAME=VALUE",
    'OMPI_ALLOW_RUN_AS_ROOT*': 'trainsonnet sets it where the pods run as root',
  },

  // ompiEnv: what Open MPI needs on the launcher. mpirun keeps host names as
  // written in the hostfile (it would cut them at the first dot), uses our
  // ssh config, and may run as root inside the container. mca adds or
  // overrides OMPI_MCA_* settings. (They stay env of the launcher, not a
  // file of the ConfigMap: kubectl exec sessions get the container's env,
  // and pointing Open MPI at a file of ours, mca_base_param_files, would
  // drop the image's own: Debian's excludes transports there.)
  ompiEnv(mca)::
    if mca == {} then ompiDefaultEnv
    else
      local all = ompiDefaults + mca;
      [{ name: 'OMPI_MCA_' + k, value: all[k] } for k in std.objectFields(all)] + prteEnv(all) + ompiRoot,
}
