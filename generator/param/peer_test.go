package param

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNetworkPolicyPeerRules(t *testing.T) {
	for _, c := range []struct {
		peer networkingv1.NetworkPolicyPeer
		rule string // a prefix of the rule; "" for none
	}{
		{networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{}}, ""},
		{networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8", Except: []string{"10.1.0.0/16"}}}, ""},
		{networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "2001:db8::/32"}}, ""},
		{networkingv1.NetworkPolicyPeer{}, "a peer needs podSelector, namespaceSelector or ipBlock"},
		{networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.1/8"}}, `ipBlock.cidr "10.0.0.1/8" must be a CIDR such as 10.0.0.0/8, with no bits set after the prefix`},
		{networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8", Except: []string{"192.168.0.0/16"}}}, `ipBlock.except "192.168.0.0/16" must be a strict subset of ipBlock.cidr 10.0.0.0/8`},
		{networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8"}, PodSelector: &metav1.LabelSelector{}}, "a peer with ipBlock must not have podSelector or namespaceSelector"},
		{networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"a b": "c"}}}, `namespaceSelector.matchLabels: Invalid value: "a b": name part must consist of`},
	} {
		got := checkObject(c.peer)
		if c.rule == "" {
			assert.Empty(t, got)
		} else {
			assert.True(t, strings.HasPrefix(got, c.rule), "got %q, want %q...", got, c.rule)
		}
	}
}
