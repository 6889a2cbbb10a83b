//go:build trainsonnet_netpol

// This file is added to kube-network-policies' package networkpolicy by
// test/node/build.sh, which also makes the controller's two rules that
// send packets to its NFQUEUE use xtQueue instead of nftables' native
// queue expression (expr.Queue).
//
// Why: the native expression needs the kernel module nft_queue, which some
// kernels lack while they have nfnetlink_queue and the xtables NFQUEUE
// target (iptables' -j NFQUEUE). This machine's is one of them: "nft add
// rule ... queue num 100" fails with ENOENT, and with it the controller's
// whole nftables transaction. nf_tables runs xtables targets through
// nft_compat, as iptables-nft does; the NFQUEUE target then queues exactly
// as the native expression would ("nft list" even shows it as "queue").
package networkpolicy

import (
	"encoding/binary"

	"github.com/google/nftables/expr"
	"github.com/google/nftables/xt"
)

// xtQueue returns the xtables NFQUEUE target, revision 3 (struct
// xt_NFQ_info_v3: queuenum, queues_total, flags), for queue num; bypass
// accepts the packets while no program reads the queue (NFQ_FLAG_BYPASS).
func xtQueue(num uint16, bypass bool) expr.Any {
	info := make(xt.Unknown, 6)
	binary.NativeEndian.PutUint16(info[0:], num)
	binary.NativeEndian.PutUint16(info[2:], 1)
	if bypass {
		binary.NativeEndian.PutUint16(info[4:], 0x01)
	}
	return &expr.Target{Name: "NFQUEUE", Rev: 3, Info: &info}
}
