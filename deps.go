package deps
import (
	_ "github.com/google/go-jsonnet"
	_ "k8s.io/api/core/v1"
	_ "k8s.io/apimachinery/pkg/api/resource"
	_ "sigs.k8s.io/kustomize/api/krusty"
	_ "sigs.k8s.io/kustomize/kyaml/filesys"
	_ "sigs.k8s.io/yaml"
	_ "github.com/spf13/cobra"
	_ "github.com/spf13/pflag"
	_ "github.com/stretchr/testify/require"
	_ "golang.org/x/crypto/ssh"
)
