// SPDX-License-Identifier: (MIT OR Apache-2.0) OR GPL-2.0
/*
 * --profile latency: each system call a traced task makes in the window,
 * timed from raw_syscalls:sys_enter to sys_exit and counted in a
 * log-linear histogram of nanoseconds per call number (16 buckets per
 * power of two, the layout of fsscale's user-space histograms, so a
 * percentile read from it is within 1/16), in per-CPU entries (no atomics,
 * no shared cache lines). An entry holds one group of 16 buckets of one
 * call: only the groups a call's times reach are used, and user space
 * sizes the map to the machine's CPUs.
 */
#include "common.bpf.h"

/*
 * On BTF raw tracepoints each task's state is in its own storage: whether
 * it is traced (looked up in `tasks` once, at its first call in the
 * window), and its open call. Every task on the machine enters the
 * program at every call; after its first, one that is not traced costs a
 * pointer test.
 */
struct task_calls {
	__u32 traced; /* 0: not yet known; 1: traced; 2: not */
	__u32 open;
	struct call call;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_calls);
} calls_of_task SEC(".maps");

/* The classic tracepoints' open calls: user space shrinks it to one entry for tp_btf. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, OPEN);
	__type(key, __u32);
	__type(value, struct call);
} calls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, CALL_GROUPS);
	__type(key, struct call_group_key);
	__type(value, struct call_group);
} latency SEC(".maps");

static __always_inline void enter_by_pid(long nr)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();

	if (!window_open() || !traced(tid))
		return;
	struct call c = { .start_ns = bpf_ktime_get_ns(), .nr = nr };

	if (bpf_map_update_elem(&calls, &tid, &c, BPF_ANY))
		count_full();
}

static __always_inline void enter_in_task(long nr)
{
	struct task_struct *task;
	struct task_calls *t;

	if (!window_open())
		return;
	task = bpf_get_current_task_btf();
	t = bpf_task_storage_get(&calls_of_task, task, NULL, 0);
	if (!t) {
		t = bpf_task_storage_get(&calls_of_task, task, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!t) {
			/* Not made while a preempted program on this CPU holds the task-storage lock. */
			if (traced(task->pid))
				count_full();
			return;
		}
	}
	/* Zeroed, made just now or by user space for a worker before the window: decided once. */
	if (!t->traced)
		t->traced = traced(task->pid) ? 1 : 2;
	if (t->traced != 1)
		return;
	t->call.nr = nr;
	t->open = 1;
	t->call.start_ns = bpf_ktime_get_ns();
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

/* The bucket of `ns` in the log-linear layout (as fsscale's histogram::bucket_of). */
static __always_inline __u32 bucket_of(__u64 ns)
{
	__u32 exponent, shift;

	if (ns < 2 * HIST_SUB)
		return ns;
	exponent = log2_of(ns);
	if (exponent > HIST_MAX_EXPONENT)
		return HIST_BUCKETS - 1;
	shift = exponent - HIST_SUB_BITS;
	return ((exponent - HIST_SUB_BITS + 1) << HIST_SUB_BITS) + ((ns >> shift) & (HIST_SUB - 1));
}

/* Adds a call of `took` ns to its number's per-CPU histogram. */
static __always_inline void count_call(__u32 nr, __u64 took)
{
	__u32 bucket = bucket_of(took);
	struct call_group_key key = { .nr = nr, .group = bucket >> HIST_SUB_BITS };
	struct call_group fresh = {};
	struct call_group *g = lookup_or_init(&latency, &key, &fresh);

	if (!g)
		return;
	/*
	 * An entry made on one CPU is zeroed on the others: a minimum of 0 is
	 * one not yet set (no call takes 0 ns between two clock reads).
	 */
	if (!g->count || took < g->min_ns)
		g->min_ns = took;
	g->count++;
	g->total_ns += took;
	if (took > g->max_ns)
		g->max_ns = took;
	g->slots[bucket & (HIST_SUB - 1)]++;
}

static __always_inline void leave_by_pid(void)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct call *c = bpf_map_lookup_elem(&calls, &tid);

	if (!c)
		return;
	__u64 took = bpf_ktime_get_ns() - c->start_ns;
	__u32 nr = c->nr;

	bpf_map_delete_elem(&calls, &tid);
	count_call(nr, took);
}

static __always_inline void leave_in_task(void)
{
	struct task_calls *t = bpf_task_storage_get(&calls_of_task, bpf_get_current_task_btf(), NULL, 0);

	if (!t || !t->open)
		return;
	t->open = 0;
	count_call(t->call.nr, bpf_ktime_get_ns() - t->call.start_ns);
}

SEC("tp_btf/sys_enter")
int BPF_PROG(sys_enter_btf, struct pt_regs *regs, long id)
{
	enter_in_task(id);
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(sys_exit_btf, struct pt_regs *regs, long ret)
{
	leave_in_task();
	return 0;
}

SEC("tracepoint/raw_syscalls/sys_enter")
int sys_enter_tp(struct trace_event_raw_sys_enter *ctx)
{
	enter_by_pid(ctx->id);
	return PASS_ON;
}

SEC("tracepoint/raw_syscalls/sys_exit")
int sys_exit_tp(struct trace_event_raw_sys_exit *ctx)
{
	leave_by_pid();
	return PASS_ON;
}
