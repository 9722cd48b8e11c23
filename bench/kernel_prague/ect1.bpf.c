// tc egress: a TCP packet sent ECT(0) leaves ECT(1), the L4S identifier
// (RFC 9331), for kernels whose TCP does not set it itself.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

char _license[] SEC("license") = "Dual MIT/GPL";

SEC("tc")
int ect1(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = data + sizeof(*eth);
	__u8 tos;

	if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP) || ip->protocol != IPPROTO_TCP)
		return TC_ACT_OK;
	if ((ip->tos & 3) != 2)
		return TC_ACT_OK;
	tos = (ip->tos & ~3) | 1;
	bpf_l3_csum_replace(skb, sizeof(*eth) + offsetof(struct iphdr, check), bpf_htons(ip->tos), bpf_htons(tos), 2);
	bpf_skb_store_bytes(skb, sizeof(*eth) + offsetof(struct iphdr, tos), &tos, 1, 0);
	return TC_ACT_OK;
}
