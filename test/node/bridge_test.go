package node_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trainsonnet/trainsonnet/test/node"
)

// TestBridgeAddressPinned: the pods' bridge keeps the MAC address up.sh
// gave it. A bridge whose address was never set takes the lowest of its
// ports' and changes as pods come and go, and running pods then send
// frames for the node IP (DNS) to an address that is no longer the node's
// until their ARP entry expires: the stop calls of a launcher failed that
// way. addr_assign_type 3 (NET_ADDR_SET) is an address set from user
// space, which the kernel never recomputes.
func TestBridgeAddressPinned(t *testing.T) {
	c, reason := node.FromEnv()
	if c == nil {
		t.Skip(reason)
	}
	raw, err := os.ReadFile(filepath.Join("/sys/class/net", c.Bridge, "addr_assign_type"))
	require.NoError(t, err)
	require.Equal(t, "3", strings.TrimSpace(string(raw)), "addr_assign_type of bridge %s (3: set by up.sh, never recomputed from its ports)", c.Bridge)
}
