package param

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
)

// The API server's rules for a volume's source, which a typed decode
// cannot see: exactly one source, and the fields that name what it mounts.
func TestVolumeSourceRules(t *testing.T) {
	vol := func(src corev1.VolumeSource) corev1.Volume { return corev1.Volume{Name: "data", VolumeSource: src} }
	for _, c := range []struct {
		vol  corev1.Volume
		rule string
	}{
		{vol(corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}), ""},
		{vol(corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}), ""},
		{vol(corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nfs", Path: "/x"}}), ""},
		{vol(corev1.VolumeSource{}), `volume "data" needs a source (emptyDir, persistentVolumeClaim, configMap, secret, nfs, csi, ...)`},
		{vol(corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}, HostPath: &corev1.HostPathVolumeSource{Path: "/x"}}), `volume "data" must have one source, not hostPath and emptyDir`},
		{vol(corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{}}), `volume "data": persistentVolumeClaim.claimName is required`},
		{vol(corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}), `volume "data": secret.secretName is required`},
		{vol(corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}), `volume "data": configMap.name is required`},
		{vol(corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{}}), `volume "data": hostPath.path is required`},
		{vol(corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nfs"}}), `volume "data": nfs.server and nfs.path are required`},
		{vol(corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{}}), `volume "data": csi.driver is required`},
		{vol(corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}), `volume "data": ephemeral.volumeClaimTemplate is required`},
	} {
		assert.Equal(t, c.rule, checkObject(c.vol))
	}
}
