// SPDX-License-Identifier: (MIT OR Apache-2.0) OR GPL-2.0
/*
 * --profile latency: each system call a traced task makes in the window,
 * timed from raw_syscalls:sys_enter to sys_exit and counted in a log2
 * histogram of nanoseconds per call number, in per-CPU slots (no atomics,
 * no shared cache lines), as bcc's syscount -L and funclatency do.
 */
#include "common.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, OPEN);
	__type(key, __u32);
	__type(value, struct call);
} calls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, SYSCALLS);
	__type(key, __u32);
	__type(value, struct call_latency);
} latency SEC(".maps");

static __always_inline void enter(long nr)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();

	if (!window_open() || !traced(tid))
		return;
	struct call c = { .start_ns = bpf_ktime_get_ns(), .nr = nr };

	if (bpf_map_update_elem(&calls, &tid, &c, BPF_ANY))
		count_full();
}

/* floor(log2(v)) for v > 0, as bcc's log2l. */
static __always_inline __u32 log2_of(__u64 v)
{
	__u32 r = 0, shift;

	shift = (v > 0xffffffff) << 5; v >>= shift; r |= shift;
	shift = (v > 0xffff) << 4; v >>= shift; r |= shift;
	shift = (v > 0xff) << 3; v >>= shift; r |= shift;
	shift = (v > 0xf) << 2; v >>= shift; r |= shift;
	shift = (v > 0x3) << 1; v >>= shift; r |= shift;
	r |= (v >> 1);
	return r;
}

static __always_inline void leave(void)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct call *c = bpf_map_lookup_elem(&calls, &tid);

	if (!c)
		return;
	__u64 took = bpf_ktime_get_ns() - c->start_ns;
	__u32 nr = c->nr;

	bpf_map_delete_elem(&calls, &tid);
	struct call_latency *l = bpf_map_lookup_elem(&latency, &nr);

	if (!l) {
		struct call_latency fresh = {};

		bpf_map_update_elem(&latency, &nr, &fresh, BPF_NOEXIST);
		l = bpf_map_lookup_elem(&latency, &nr);
		if (!l) {
			count_full();
			return;
		}
	}
	__u32 slot = took ? log2_of(took) : 0;

	if (slot >= LOG2_SLOTS)
		slot = LOG2_SLOTS - 1;
	l->count++;
	l->total_ns += took;
	l->slots[slot]++;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(sys_enter_btf, struct pt_regs *regs, long id)
{
	enter(id);
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(sys_exit_btf, struct pt_regs *regs, long ret)
{
	leave();
	return 0;
}

SEC("tracepoint/raw_syscalls/sys_enter")
int sys_enter_tp(struct trace_event_raw_sys_enter *ctx)
{
	enter(ctx->id);
	return 0;
}

SEC("tracepoint/raw_syscalls/sys_exit")
int sys_exit_tp(struct trace_event_raw_sys_exit *ctx)
{
	leave();
	return 0;
}
