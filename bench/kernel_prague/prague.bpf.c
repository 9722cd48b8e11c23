// TCP Prague v0.6's window law as a BPF congestion control (struct_ops), so
// that real applications run through ccbench-emu can meet an L4S TCP in the
// real kernel's TCP (this kernel has no tcp_prague and loads no modules).
// It is a port of ccbench's own Prague model (crates/ccbench-core/src/cc/
// prague/), which follows L4STeam's tcp_prague.c MODULE_VERSION 0.6, not
// L4STeam's code: alpha starts at 1, g = 1/16 per round, a CE round cuts
// cwnd by alpha/2, additive increase of one 1500 B packet per RTT (scaled by
// (srtt/25 ms)^2 below 25 ms after 500 rounds), a loss halves with no growth
// until Open, pacing MTU*max(cwnd, in_flight)/srtt (x2 while cwnd <
// ssthresh/2). The flags ask for AccECN (the receiver's listener must run
// it too). What the host does instead: ECT(1) on the data (ect1.bpf.c; this
// kernel sends ECT(1) only while negotiating) and the GSO cap
// (prague_max_tso_segs, 2^-12 s: `ip link set DEV gso_max_segs 2` at
// 100 Mbit/s). Not here: classic-ECN detection (off in v0.6), rate mode.
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char _license[] SEC("license") = "Dual MIT/GPL";

extern __u32 tcp_slow_start(struct tcp_sock *tp, __u32 acked) __ksym;

#define CWND_UNIT 20
#define ONE_CWND (1ULL << CWND_UNIT)
#define ALPHA_BITS 24
#define MAX_ALPHA (1ULL << ALPHA_BITS)
#define SHIFT_G 4
#define MIN_CWND 2
#define MINIMUM_RATE 12500ULL
#define MTU_SYS 1500ULL
#define RTT_TARGET_US 25000ULL
#define RTT_TRANSITION 500
#define MAX_SCALED_RTT_US 100000ULL
#define HDRS 52 /* tcp_mss_to_mtu: IPv4 20 + TCP 20 + timestamps 12 */

struct prague {
	__u64 upscaled_alpha;
	__u64 frac_cwnd;
	__u64 rate_bytes;
	__u64 loss_rate_bytes;
	__u64 alpha_stamp;
	__u64 cwr_stamp;
	__u32 next_seq;
	__u32 old_delivered;
	__u32 old_delivered_ce;
	__u32 round;
	__u32 ai_ack_increase;
	__u32 loss_cwnd;
	__u32 last_delivered_ce;
	__u8 saw_ce;
	__u8 in_loss;
	__u8 ca_state;
	__u8 cwr_seen;
};

static __always_inline struct inet_connection_sock *inet_csk(struct sock *sk)
{
	return (struct inet_connection_sock *)sk;
}
static __always_inline struct prague *ca(struct sock *sk)
{
	return (struct prague *)inet_csk(sk)->icsk_ca_priv;
}
static __always_inline struct tcp_sock *tp_of(struct sock *sk) { return (struct tcp_sock *)sk; }
static __always_inline int in_slow_start(struct tcp_sock *tp) { return tp->snd_cwnd < tp->snd_ssthresh; }
static __always_inline __u32 in_flight(struct tcp_sock *tp)
{
	return tp->packets_out - (tp->sacked_out + tp->lost_out) + tp->retrans_out;
}
static __always_inline int cwnd_limited(struct tcp_sock *tp)
{
	if (in_slow_start(tp))
		return tp->snd_cwnd < 2 * tp->max_packets_out;
	return tp->is_cwnd_limited;
}
static __always_inline __u64 mtu(struct tcp_sock *tp) { return tp->mss_cache + HDRS; }
static __always_inline __u64 srtt_us(struct tcp_sock *tp) { return tp->srtt_us >> 3; }
static __always_inline int rtt_indep(struct prague *p, struct tcp_sock *tp)
{
	return !in_slow_start(tp) && p->round >= RTT_TRANSITION;
}
static __always_inline __u64 per_packet_rate(struct tcp_sock *tp)
{
	__u64 s = srtt_us(tp);
	return s ? mtu(tp) * 1000000ULL / s : mtu(tp) * 8000000ULL;
}
static __always_inline __u64 frac_to_rate(struct prague *p, struct tcp_sock *tp)
{
	__u64 r = (per_packet_rate(tp) * (p->frac_cwnd >> 10)) >> 10;
	return r > MINIMUM_RATE ? r : MINIMUM_RATE;
}
static __always_inline void update_ai(struct prague *p, struct tcp_sock *tp)
{
	__u64 s = srtt_us(tp);
	if (p->round < RTT_TRANSITION || !s || s > MAX_SCALED_RTT_US || s >= RTT_TARGET_US) {
		p->ai_ack_increase = ONE_CWND;
		return;
	}
	p->ai_ack_increase = ((s * s << CWND_UNIT) + RTT_TARGET_US * RTT_TARGET_US / 2) / (RTT_TARGET_US * RTT_TARGET_US);
}
static __always_inline void new_round(struct prague *p, struct tcp_sock *tp)
{
	p->next_seq = tp->snd_nxt;
	p->old_delivered = tp->delivered;
	p->old_delivered_ce = tp->delivered_ce;
	if (!in_slow_start(tp) && p->round < 0xffffffff)
		p->round++;
	update_ai(p, tp);
}

SEC("struct_ops")
void BPF_PROG(prague_init, struct sock *sk)
{
	struct prague *p = ca(sk);
	struct tcp_sock *tp = tp_of(sk);

	p->upscaled_alpha = MAX_ALPHA << SHIFT_G; /* v0.6: alpha starts at 1 */
	p->frac_cwnd = (__u64)tp->snd_cwnd << CWND_UNIT;
	p->rate_bytes = MINIMUM_RATE;
	p->loss_rate_bytes = 0;
	p->alpha_stamp = tp->tcp_mstamp;
	p->cwr_stamp = 0;
	p->cwr_seen = 0;
	p->round = 0;
	p->saw_ce = 0;
	p->in_loss = 0;
	p->ca_state = TCP_CA_Open;
	p->loss_cwnd = 0;
	p->last_delivered_ce = tp->delivered_ce;
	new_round(p, tp);
	sk->sk_pacing_status = SK_PACING_NEEDED;
}

static __always_inline void enter_cwr(struct prague *p, struct tcp_sock *tp)
{
	__u64 alpha, red;

	if (rtt_indep(p, tp) && p->cwr_seen && tp->tcp_mstamp - p->cwr_stamp < RTT_TARGET_US)
		return;
	p->cwr_stamp = tp->tcp_mstamp;
	p->cwr_seen = 1;
	alpha = p->upscaled_alpha >> SHIFT_G;
	red = (alpha * p->frac_cwnd + MAX_ALPHA) >> (ALPHA_BITS + 1);
	p->frac_cwnd -= red;
	p->rate_bytes = frac_to_rate(p, tp);
}

static __always_inline void enter_loss(struct prague *p, struct tcp_sock *tp, __u32 cwnd)
{
	p->loss_cwnd = cwnd;
	p->loss_rate_bytes = p->rate_bytes;
	p->frac_cwnd -= p->frac_cwnd >> 1;
	p->rate_bytes = frac_to_rate(p, tp);
	p->in_loss = 1;
}

SEC("struct_ops")
void BPF_PROG(prague_state, struct sock *sk, __u8 new_state)
{
	struct prague *p = ca(sk);
	struct tcp_sock *tp = tp_of(sk);

	if (new_state == p->ca_state)
		return;
	if (new_state == TCP_CA_Recovery)
		enter_loss(p, tp, tp->snd_cwnd);
	else if (new_state == TCP_CA_CWR)
		enter_cwr(p, tp);
	else if (new_state == TCP_CA_Open)
		p->in_loss = 0;
	p->ca_state = new_state;
}

SEC("struct_ops")
void BPF_PROG(prague_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	struct prague *p = ca(sk);
	struct tcp_sock *tp = tp_of(sk);

	/* An RTO: the loss response with the window before the timeout. */
	if (ev == CA_EVENT_LOSS && (p->ca_state == TCP_CA_Open || p->ca_state == TCP_CA_Disorder))
		enter_loss(p, tp, tp->snd_cwnd);
}

SEC("struct_ops")
__u32 BPF_PROG(prague_ssthresh, struct sock *sk)
{
	return tp_of(sk)->snd_ssthresh;
}

SEC("struct_ops")
__u32 BPF_PROG(prague_undo, struct sock *sk)
{
	struct prague *p = ca(sk);
	struct tcp_sock *tp = tp_of(sk);
	__u64 s = srtt_us(tp), m = mtu(tp);

	p->in_loss = 0;
	if (p->loss_rate_bytes > p->rate_bytes)
		p->rate_bytes = p->loss_rate_bytes;
	/* rate x srtt back to a fractional window (2^-20 segment), with Linux's
	 * 2^20 us second: rate * srtt_us / MTU */
	if (s && m)
		p->frac_cwnd = p->rate_bytes * s / m;
	return p->loss_cwnd > tp->snd_cwnd ? p->loss_cwnd : tp->snd_cwnd;
}

SEC("struct_ops")
void BPF_PROG(prague_cong_control, struct sock *sk, __u32 ack, int flag, const struct rate_sample *rs)
{
	struct prague *p = ca(sk);
	struct tcp_sock *tp = tp_of(sk);
	__s64 acked = rs->acked_sacked;
	/* this ACK's CE-marked segments (tcp_prague.c's rs->ece_delta): mainline's
	 * rs->delivered_ce spans the whole sample interval, about an RTT */
	__u32 ce = tp->delivered_ce - p->last_delivered_ce;
	__u32 target;
	__u64 rate, window, inflight;

	p->last_delivered_ce = tp->delivered_ce;
	if (ce) {
		p->saw_ce = 1;
		acked -= ce;
	}
	if (acked > 0 && !p->in_loss && cwnd_limited(tp)) {
		__u64 a = acked, inc;

		if (in_slow_start(tp)) {
			a = tcp_slow_start(tp, (__u32)a);
			p->frac_cwnd = (__u64)tp->snd_cwnd << CWND_UNIT;
		}
		if (a) {
			inc = a * p->ai_ack_increase;
			if (p->frac_cwnd)
				inc = ((inc << CWND_UNIT) + p->frac_cwnd / 2) / p->frac_cwnd;
			inc = inc * MTU_SYS / mtu(tp);
			p->frac_cwnd += inc > a ? inc : a;
		}
	}
	/* one segment a step towards ceil(frac_cwnd), at least 2 */
	target = (__u32)((p->frac_cwnd + ONE_CWND - 1) >> CWND_UNIT);
	if (target < MIN_CWND)
		target = MIN_CWND;
	if (tp->snd_cwnd > target) {
		tp->snd_cwnd = tp->snd_cwnd - 1;
		tp->snd_ssthresh = tp->snd_cwnd;
		update_ai(p, tp);
	} else if (tp->snd_cwnd < target) {
		tp->snd_cwnd = tp->snd_cwnd + 1;
		update_ai(p, tp);
	}
	/* the round's end: alpha = alpha - alpha*g + g*F */
	if (!((__s32)(tp->snd_una - p->next_seq) < 0) &&
	    (!rtt_indep(p, tp) || tp->tcp_mstamp - p->alpha_stamp >= RTT_TARGET_US)) {
		if (p->saw_ce) {
			__u64 f = tp->delivered_ce - p->old_delivered_ce;
			__u64 d = tp->delivered - p->old_delivered;
			__u64 up;

			if (f)
				f = (f << ALPHA_BITS) / (d ? d : 1);
			up = p->upscaled_alpha - (p->upscaled_alpha >> SHIFT_G) + f;
			if (up > (MAX_ALPHA << SHIFT_G))
				up = MAX_ALPHA << SHIFT_G;
			p->upscaled_alpha = up;
			p->alpha_stamp = tp->tcp_mstamp;
		}
		new_round(p, tp);
	}
	/* pacing: MTU x max(cwnd, in flight) / srtt, doubled well below ssthresh;
	 * in window mode this is rate_bytes (what undo restores after a loss) */
	window = tp->snd_cwnd;
	inflight = in_flight(tp);
	if (inflight > window)
		window = inflight;
	rate = per_packet_rate(tp) * window;
	if (rate < MINIMUM_RATE)
		rate = MINIMUM_RATE;
	p->rate_bytes = rate;
	if (tp->snd_cwnd < tp->snd_ssthresh / 2)
		rate <<= 1;
	if (srtt_us(tp))
		sk->sk_pacing_rate = rate;
}

SEC(".struct_ops")
struct tcp_congestion_ops prague = {
	.init = (void *)prague_init,
	.ssthresh = (void *)prague_ssthresh,
	.undo_cwnd = (void *)prague_undo,
	.set_state = (void *)prague_state,
	.cwnd_event = (void *)prague_cwnd_event,
	.cong_control = (void *)prague_cong_control,
	/* TCP_CONG_NEEDS_ECN | TCP_CONG_NEEDS_ACCECN | TCP_CONG_ECT_1_NEGOTIATION */
	.flags = 0x2 | 0x4 | 0x8,
	.name = "bpf_prague",
};
