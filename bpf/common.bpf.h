/* SPDX-License-Identifier: (MIT OR Apache-2.0) OR GPL-2.0 */
/*
 * What every fsscale profile shares: the switch that confines the programs
 * to the measured window, the set of traced tasks (the workers, and every
 * task they start), the stack map, and the per-CPU count of what could not
 * be recorded. Each object includes it and gets its own copies.
 */
#ifndef FSSCALE_COMMON_BPF_H
#define FSSCALE_COMMON_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "fsscale.h"

/*
 * Inside the window, its number (user space counts the windows it opens
 * from 1); 0 outside. Its own map: user space writes it, programs only read it.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} window SEC(".maps");

/* The traced tasks, by thread id: seeded by user space, grown at each fork. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TASKS);
	__type(key, __u32);
	__type(value, __u8);
} tasks SEC(".maps");

/*
 * The kernel walks at most a stack map value's frames: an object that needs
 * fewer (a lock's site is the lock call and two callers) defines
 * STACK_FRAMES before including this, and pays for a shorter walk.
 */
#ifndef STACK_FRAMES
#define STACK_FRAMES STACK_DEPTH
#endif

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, STACKS);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, STACK_FRAMES * sizeof(__u64));
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lost);
} lost SEC(".maps");

static __always_inline __u32 window_number(void)
{
	__u32 zero = 0;
	__u32 *number = bpf_map_lookup_elem(&window, &zero);

	return number ? *number : 0;
}

static __always_inline bool window_open(void)
{
	return window_number() != 0;
}

static __always_inline bool traced(__u32 tid)
{
	return bpf_map_lookup_elem(&tasks, &tid) != NULL;
}

/* Only this CPU writes its slot: no atomic needed. */
static __always_inline void count_full(void)
{
	__u32 zero = 0;
	struct lost *l = bpf_map_lookup_elem(&lost, &zero);

	if (l)
		l->full++;
}

static __always_inline void count_missed(void)
{
	__u32 zero = 0;
	struct lost *l = bpf_map_lookup_elem(&lost, &zero);

	if (l)
		l->missed++;
}

static __always_inline void count_nested(void)
{
	__u32 zero = 0;
	struct lost *l = bpf_map_lookup_elem(&lost, &zero);

	if (l)
		l->nested++;
}

/*
 * Stack sampling (the lock and off-CPU profiles): a task's stack is walked
 * for one event in `every` (N, 1 to `max_every`), which starts at 1,
 * doubles while the task's walks come less than SAMPLE_DENSE_NS apart and
 * halves when more than SAMPLE_SPARSE_NS apart.
 */
#define SAMPLE_DENSE_NS 50000ULL
#define SAMPLE_SPARSE_NS 5000000ULL

static __always_inline __u32 sample_every(__u32 every, __u64 since_ns, __u64 max_every)
{
	if (!every)
		every = 1;
	else if (since_ns < SAMPLE_DENSE_NS && every < max_every)
		every *= 2;
	else if (since_ns > SAMPLE_SPARSE_NS && every > 1)
		every /= 2;
	if (every > max_every)
		every = max_every ? max_every : 1;
	return every;
}

/* Events before the next walk: uniform over [0, 2(every - 1)], every - 1 on average and in no fixed phase. */
static __always_inline __u32 sample_reuse(__u32 every)
{
	return every > 1 ? bpf_get_prandom_u32() % (2 * every - 1) : 0;
}

/*
 * The value at `key`, made from `init` if it is not there yet (libbpf-tools'
 * bpf_map_lookup_or_try_init); NULL, counted as lost, if the map is full.
 */
static __always_inline void *lookup_or_init(void *map, const void *key, const void *init)
{
	void *value = bpf_map_lookup_elem(map, key);

	if (value)
		return value;
	/* Only if still new: another CPU may have added it meanwhile. */
	bpf_map_update_elem(map, key, init, BPF_NOEXIST);
	value = bpf_map_lookup_elem(map, key);
	if (!value)
		count_full();
	return value;
}

/*
 * What a classic tracepoint program returns: non-zero lets the kernel go on
 * to the tracepoint's other perf events on this CPU (another tool's
 * `perf stat -e lock:contention_begin`); 0 would drop the event for them.
 * BTF raw tracepoints have no such say: they return 0.
 */
#define PASS_ON 1

/* A traced task's child is traced too (a command's processes, a worker's threads). */
static __always_inline void follow_fork(__u32 parent, __u32 child)
{
	__u8 yes = 1;

	if (!traced(parent))
		return;
	if (bpf_map_update_elem(&tasks, &child, &yes, BPF_ANY))
		count_full();
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(fork_btf, struct task_struct *parent, struct task_struct *child)
{
	follow_fork(parent->pid, child->pid);
	return 0;
}

SEC("tracepoint/sched/sched_process_fork")
int fork_tp(struct trace_event_raw_sched_process_fork *ctx)
{
	follow_fork(ctx->parent_pid, ctx->child_pid);
	return PASS_ON;
}

/*
 * The programs call GPL-only helpers (bpf_get_stackid, bpf_probe_read_kernel);
 * a dual licence is one the kernel accepts, and fsscale's own still holds for the rest.
 */
char LICENSE[] SEC("license") = "Dual MIT/GPL";

#endif
