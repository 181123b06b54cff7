// SPDX-License-Identifier: (MIT OR Apache-2.0) OR GPL-2.0
/*
 * --profile offcpu: at sched_switch a traced task going to sleep is kept,
 * with its kernel stack and state; sched_wakeup stamps its wakeup; when it
 * is switched in again the sleep is added to the totals of its (stack,
 * state), as libbpf-tools' offcputime does. Time asleep runs to the wakeup;
 * the wait for a CPU after it is kept apart.
 *
 * A sleep still open when its task's next one begins in the same window
 * ended unseen (the kernel ran no program for that switch-in, which
 * happens under load): it is counted as missed, not added.
 *
 * On BTF raw tracepoints the open sleep lives in the task's own storage:
 * a switch-in or wakeup of a task never traced costs one pointer test, not
 * a hash lookup. The classic tracepoints give only pids: a hash by pid.
 */
#include "common.bpf.h"

/*
 * On BTF raw tracepoints stacks are sampled, as the lock profile's are: a
 * task's stack is walked for one sleep in N, chosen by a countdown of
 * random length; the sleeps between are counted exactly under
 * STACK_NOT_SAMPLED, which user space spreads over the stacks walked in
 * the same state.
 */
struct task_sleep {
	struct sleep sleep;
	__u64 walked_ns;
	__u32 countdown;
	__u32 every;
	/* The states (STATE_* bits) the task's stack was walked in: a state's first sleep is walked whatever the countdown. */
	__u32 walked_states;
	__u32 unused;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_sleep);
} sleep_of_task SEC(".maps");

/* The most sleeps one walked stack stands for on average (1: every sleep walks). */
const volatile __u64 max_every = 64;


/* The classic tracepoints' way: user space shrinks it to one entry for tp_btf. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, OPEN);
	__type(key, __u32);
	__type(value, struct sleep);
} asleep SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SITES);
	__type(key, struct sleep_key);
	__type(value, struct sleep_site);
} sites SEC(".maps");

/* Sleeps shorter than this (to the wakeup) are not counted (bcc's --min-block-time). */
const volatile __u64 min_sleep_ns = 0;

/* The kernel's raw task states that the switch tracepoint reports. */
#define TASK_REPORT 0x7f
#define TASK_NOLOAD 0x400
#define TASK_RTLOCK_WAIT 0x1000
#define SLEEPS (STATE_INTERRUPTIBLE | STATE_UNINTERRUPTIBLE | STATE_STOPPED | STATE_TRACED | STATE_IDLE)

/*
 * A raw task state as the classic tracepoint's prev_state reports it
 * (its highest TASK_REPORT bit; TASK_IDLE as STATE_IDLE), so both ways in
 * agree; 0 for a task that is not asleep.
 */
static __always_inline __u32 reported(__u32 raw)
{
	__u32 bits = raw & TASK_REPORT;

	if (raw == (STATE_UNINTERRUPTIBLE | TASK_NOLOAD))
		return STATE_IDLE;
	if (raw == TASK_RTLOCK_WAIT)
		return STATE_UNINTERRUPTIBLE;
	/* The highest bit: at most 0x40. */
	for (__u32 bit = 0x40; bit; bit >>= 1)
		if (bits & bit)
			return bit;
	return 0;
}

/* Fills a new sleep: off the CPU from now (the stack walk is the scheduler's time, not the task's). */
static __always_inline void begin_sleep(void *ctx, struct sleep *s, __u32 state, __u32 window)
{
	s->start_ns = bpf_ktime_get_ns();
	s->window = window;
	s->woken_ns = 0;
	s->state = state;
	/* The stack is the task's own: the program runs in it, before the switch. */
	s->stack = bpf_get_stackid(ctx, &stacks, 0);
}

/* As begin_sleep, with the stack sampled (see struct task_sleep). */
static __always_inline void begin_sleep_sampled(void *ctx, struct task_sleep *t, __u32 state, __u32 window)
{
	struct sleep *s = &t->sleep;
	__u64 now;

	if (t->countdown > 0 && (t->walked_states & state)) {
		t->countdown--;
		s->start_ns = bpf_ktime_get_ns();
		s->window = window;
		s->woken_ns = 0;
		s->state = state;
		s->stack = STACK_NOT_SAMPLED;
		return;
	}
	t->walked_states |= state;
	if (t->countdown > 0) {
		/* The state's first sleep: walked, the countdown left as it was. */
		begin_sleep(ctx, s, state, window);
		return;
	}
	now = bpf_ktime_get_ns();
	t->every = sample_every(t->every, now - t->walked_ns, max_every);
	begin_sleep(ctx, s, state, window);
	t->walked_ns = now;
	t->countdown = sample_reuse(t->every);
}

/* Adds an ended sleep to its site's totals. */
static __always_inline void end_sleep(struct sleep *s)
{
	__u64 now = bpf_ktime_get_ns();
	/* Never woken (stopped, or woken before the window): all of it asleep. */
	__u64 woken = s->woken_ns ? s->woken_ns : now;
	__u64 slept = woken - s->start_ns;
	__u64 to_run = now - woken;
	struct sleep_key key = { .stack = s->stack, .state = s->state };

	if (slept < min_sleep_ns)
		return;
	struct sleep_site fresh = {};
	struct sleep_site *site = lookup_or_init(&sites, &key, &fresh);

	if (!site)
		return;
	__sync_fetch_and_add(&site->count, 1);
	__sync_fetch_and_add(&site->asleep_ns, slept);
	__sync_fetch_and_add(&site->wake_to_run_ns, to_run);
	if (site->max_ns < slept)
		site->max_ns = slept;
}

/* Linux 5.18 and later pass the state the task had as it was switched out. */
SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch_btf, bool preempt, struct task_struct *prev, struct task_struct *next, unsigned int prev_state)
{
	__u32 window = window_number();
	struct task_sleep *t;
	__u32 state;

	if (!window)
		return 0;
	state = preempt ? 0 : reported(prev_state);
	if ((state & SLEEPS) && traced(prev->pid)) {
		t = bpf_task_storage_get(&sleep_of_task, prev, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (t) {
			if (t->sleep.start_ns && t->sleep.window == window)
				count_missed();
			begin_sleep_sampled(ctx, t, state, window);
		} else {
			count_full();
		}
	}
	/* A task that never slept traced has no storage: no lookup, no allocation. */
	t = bpf_task_storage_get(&sleep_of_task, next, NULL, 0);
	if (t && t->sleep.start_ns) {
		/* One begun in an earlier window would count the time between. */
		if (t->sleep.window == window)
			end_sleep(&t->sleep);
		t->sleep.start_ns = 0;
	}
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(sched_wakeup_btf, struct task_struct *p)
{
	struct sleep *s = bpf_task_storage_get(&sleep_of_task, p, NULL, 0);

	if (s && s->start_ns && !s->woken_ns)
		s->woken_ns = bpf_ktime_get_ns();
	return 0;
}

SEC("tracepoint/sched/sched_switch")
int sched_switch_tp(struct trace_event_raw_sched_switch *ctx)
{
	__u32 prev = ctx->prev_pid, next = ctx->next_pid, window = window_number();
	struct sleep *s;

	if (!window)
		return PASS_ON;
	if ((ctx->prev_state & SLEEPS) && traced(prev)) {
		struct sleep fresh = {};

		s = bpf_map_lookup_elem(&asleep, &prev);
		if (s && s->window == window)
			count_missed();
		begin_sleep(ctx, &fresh, ctx->prev_state, window);
		if (bpf_map_update_elem(&asleep, &prev, &fresh, BPF_ANY))
			count_full();
	}
	s = bpf_map_lookup_elem(&asleep, &next);
	if (s) {
		if (s->window == window)
			end_sleep(s);
		bpf_map_delete_elem(&asleep, &next);
	}
	return PASS_ON;
}

SEC("tracepoint/sched/sched_wakeup")
int sched_wakeup_tp(struct trace_event_raw_sched_wakeup_template *ctx)
{
	__u32 pid = ctx->pid;
	struct sleep *s;

	if (!window_open())
		return PASS_ON;
	s = bpf_map_lookup_elem(&asleep, &pid);
	if (s && !s->woken_ns)
		s->woken_ns = bpf_ktime_get_ns();
	return PASS_ON;
}
