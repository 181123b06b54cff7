// SPDX-License-Identifier: (MIT OR Apache-2.0) OR GPL-2.0
/*
 * --profile locks: on lock:contention_begin a traced task's wait opens,
 * keyed by (task, level), with its kernel stack; on contention_end it is
 * closed and added to the totals of its (lock, stack, flags), as
 * `perf lock contention -b` does. The waiter pays a stack walk into a map,
 * not a copy to user space.
 *
 * A sleeping lock's wait also notes who held the lock as it began: a
 * mutex's or rwsem's owner word names the holding task (perf lock
 * contention's owner mode reads the same word), or says readers hold it.
 *
 * A lock's site needs the frames above the tracer and the lock's own code,
 * and three more; the kernel walks at most LOCK_STACK_DEPTH (perf lock
 * contention walks 8), not the off-CPU flame graph's STACK_DEPTH.
 */
#include "vmlinux.h"
#include "fsscale.h"
#define STACK_FRAMES LOCK_STACK_DEPTH
#include "common.bpf.h"

/* The classic tracepoints' open waits: user space shrinks it to one entry for tp_btf. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, OPEN);
	__type(key, struct wait_key);
	__type(value, struct wait);
} waits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SITES);
	__type(key, struct lock_site_key);
	__type(value, struct lock_site);
} sites SEC(".maps");

/*
 * Locks a stack was walked on: a lock's first wait is walked whatever the
 * countdown, so that every lock's waits have a site to be spread over.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SITES);
	__type(key, __u64);
	__type(value, __u8);
} walked_locks SEC(".maps");

/* Whether to name the object a lock belongs to (needs the kernel's BTF for the layouts). */
const volatile __u8 identify_objects = 1;

/*
 * A task has at most LOCK_LEVELS waits open: its own, and one begun inside
 * it (an interrupt's spinlock while it spins for a mutex); deeper ones are
 * counted as lost. On BTF raw tracepoints they live in the task's own
 * storage; the classic tracepoints keep them in `waits` by (task, level).
 */
/*
 * Stacks are sampled: a task's kernel stack is walked for one wait in N,
 * the waits between counted exactly under STACK_NOT_SAMPLED, which user
 * space spreads over the stacks walked on the same lock. Which wait is
 * walked is a countdown of random length (sample_reuse) that never looks
 * at the waits, so the walked ones are a fair sample of them.
 */
struct task_waits {
	struct wait level[LOCK_LEVELS];
	__u64 walked_ns;
	__u32 countdown;
	__u32 every;
};

/* The most waits one walked stack stands for on average (1: every wait walks). */
const volatile __u64 max_every = 64;


struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_waits);
} waits_of_task SEC(".maps");

/* A mutex's and a rwsem's owner word: the holding task, its low bits flags. */
#define OWNER_FLAGS 0x7UL
#define RWSEM_READER_OWNED 0x1UL

/*
 * Who holds the sleeping lock `lock` (of the tracepoint's `flags`): its
 * task id and whether it is on a CPU; none for a lock of another kind,
 * or a kernel whose mutex keeps no owner word (PREEMPT_RT's).
 */
static __always_inline void note_holder(struct wait *w, __u64 lock, __u32 flags)
{
	struct task_struct *task;
	long owner = 0;
	int on_cpu = 0;

	w->holder = 0;
	w->holder_on_cpu = 0;
	if (flags & LCB_F_MUTEX) {
		if (!bpf_core_field_exists(((struct mutex *)0)->owner) ||
		    bpf_core_read(&owner, sizeof(owner), &((struct mutex *)lock)->owner.counter))
			return;
	} else if (!(flags & (LCB_F_SPIN | LCB_F_PERCPU | LCB_F_RT)) && (flags & (LCB_F_READ | LCB_F_WRITE))) {
		if (!bpf_core_field_exists(((struct rw_semaphore *)0)->owner) ||
		    bpf_core_read(&owner, sizeof(owner), &((struct rw_semaphore *)lock)->owner.counter))
			return;
		if (owner & RWSEM_READER_OWNED) {
			w->holder = HOLDER_READERS;
			return;
		}
	} else {
		return;
	}
	task = (void *)(owner & ~OWNER_FLAGS);
	if (!task || bpf_core_read(&w->holder, sizeof(w->holder), &task->pid))
		return;
	if (bpf_core_field_exists(task->on_cpu) && !bpf_core_read(&on_cpu, sizeof(on_cpu), &task->on_cpu))
		w->holder_on_cpu = on_cpu != 0;
}

/* A new wait into `w`: its holder and stack, then its start (so neither is counted as waiting). */
static __always_inline void open_wait(struct wait *w, __u64 lock, __u32 flags, void *ctx)
{
	w->lock = lock;
	w->flags = flags;
	note_holder(w, lock, flags);
	/* A stack the map cannot take (a negative id) is kept as `[no stack]`. */
	w->stack = bpf_get_stackid(ctx, &stacks, 0);
	w->start_ns = bpf_ktime_get_ns();
}

/* As open_wait, with the stack sampled (see struct task_waits and sample_every). */
static __always_inline void open_wait_sampled(struct task_waits *t, struct wait *w, __u64 lock, __u32 flags,
					      void *ctx)
{
	__u64 now;
	__u8 walked = 1;

	if (t->countdown > 0 && bpf_map_lookup_elem(&walked_locks, &lock)) {
		t->countdown--;
		w->lock = lock;
		w->flags = flags;
		note_holder(w, lock, flags);
		w->stack = STACK_NOT_SAMPLED;
		w->start_ns = bpf_ktime_get_ns();
		return;
	}
	if (t->countdown > 0) {
		/* The lock's first wait: walked, the countdown left as it was. */
		open_wait(w, lock, flags, ctx);
		bpf_map_update_elem(&walked_locks, &lock, &walked, BPF_ANY);
		return;
	}
	now = bpf_ktime_get_ns();
	t->every = sample_every(t->every, now - t->walked_ns, max_every);
	open_wait(w, lock, flags, ctx);
	bpf_map_update_elem(&walked_locks, &lock, &walked, BPF_ANY);
	t->walked_ns = now;
	t->countdown = sample_reuse(t->every);
}

static __always_inline void begin_in_task(__u64 lock, __u32 flags, void *ctx)
{
	struct task_waits *open;
	int level;

	if (!window_open() || !traced((__u32)bpf_get_current_pid_tgid()))
		return;
	open = bpf_task_storage_get(&waits_of_task, bpf_get_current_task_btf(), NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!open) {
		count_full();
		return;
	}
	for (level = 0; level < LOCK_LEVELS; level++) {
		if (!open->level[level].lock) {
			open_wait_sampled(open, &open->level[level], lock, flags, ctx);
			return;
		}
		/* The same lock again (a mutex that spun, now sleeps): one wait, of the later kind. */
		if (open->level[level].lock == lock) {
			open->level[level].flags = flags;
			note_holder(&open->level[level], lock, flags);
			return;
		}
	}
	count_nested();
}

static __always_inline void begin_by_pid(__u64 lock, __u32 flags, void *ctx)
{
	struct wait_key key = { .tid = (__u32)bpf_get_current_pid_tgid() };
	struct wait *open;
	int level;

	if (!window_open() || !traced(key.tid))
		return;
	for (level = 0; level < LOCK_LEVELS; level++) {
		key.level = level;
		open = bpf_map_lookup_elem(&waits, &key);
		if (!open)
			break;
		if (open->lock == lock) {
			open->flags = flags;
			note_holder(open, lock, flags);
			return;
		}
	}
	if (level == LOCK_LEVELS) {
		count_nested();
		return;
	}
	struct wait w = {};

	open_wait(&w, lock, flags, ctx);
	if (bpf_map_update_elem(&waits, &key, &w, BPF_ANY))
		count_full();
}

/*
 * The inode whose member at `offset` the lock would be, if it is one:
 * every inode's i_mapping points at its own i_data, which memory that is
 * not an inode almost never does.
 */
static __always_inline struct inode *inode_around(__u64 lock, __u64 offset)
{
	struct inode *inode = (void *)(lock - offset);
	struct address_space *mapping = NULL;

	if (bpf_core_read(&mapping, sizeof(mapping), &inode->i_mapping))
		return NULL;
	return (void *)mapping == (void *)&inode->i_data ? inode : NULL;
}

static __always_inline void *dentry_inline_name(struct dentry *d)
{
	if (bpf_core_field_exists(d->d_shortname))
		return (void *)&d->d_shortname;
	return (void *)&((struct dentry___pre_6_14 *)d)->d_iname;
}

/*
 * Which object a contended lock belongs to, read once per (lock, stack):
 * a directory's i_rwsem (creates and unlinks in it), a dentry's d_lock,
 * an inode's i_lock, or a super block's s_inode_list_lock. Each candidate
 * is checked for a member that points into the object itself before
 * anything else of it is read.
 */
static __always_inline void identify(struct lock_site *site, __u64 lock, __u32 flags)
{
	struct inode *inode = NULL;
	__u32 kind = 0;

	if (flags == LCB_F_SPIN) {
		/* A short-named dentry's d_name.name is its own inline name. */
		struct dentry *d = (void *)(lock - bpf_core_field_offset(struct dentry, d_lockref.lock));
		const unsigned char *name = NULL;

		if (!bpf_core_read(&name, sizeof(name), &d->d_name.name) && (void *)name == dentry_inline_name(d)) {
			kind = OBJECT_DENTRY;
			/* The dentry's inode, if it has one, stands for it. */
			bpf_core_read(&inode, sizeof(inode), &d->d_inode);
			if (!inode) {
				site->mode_kind = kind << 16;
				return;
			}
		} else if ((inode = inode_around(lock, bpf_core_field_offset(struct inode, i_lock)))) {
			kind = OBJECT_INODE;
		} else {
			/* A super block's inode list lock? Its root dentry points back to it. */
			struct super_block *sb = (void *)(lock - bpf_core_field_offset(struct super_block, s_inode_list_lock));
			struct super_block *back = NULL;
			struct dentry *root = NULL;

			if (bpf_core_read(&root, sizeof(root), &sb->s_root) || !root ||
			    bpf_core_read(&back, sizeof(back), &root->d_sb) || back != sb)
				return;
			site->mode_kind = OBJECT_SUPER << 16;
			bpf_core_read(&site->dev, sizeof(site->dev), &sb->s_dev);
			return;
		}
	} else if (!(flags & (LCB_F_SPIN | LCB_F_MUTEX | LCB_F_PERCPU | LCB_F_RT)) && (flags & (LCB_F_READ | LCB_F_WRITE))) {
		/* A plain rwsem may be an inode's i_rwsem. */
		inode = inode_around(lock, bpf_core_field_offset(struct inode, i_rwsem));
		if (!inode)
			return;
		kind = OBJECT_INODE;
	} else {
		return;
	}
	__u16 mode = 0;
	struct super_block *sb = NULL;

	site->ino = BPF_CORE_READ(inode, i_ino);
	bpf_core_read(&mode, sizeof(mode), &inode->i_mode);
	site->mode_kind = (kind << 16) | mode;
	if (!bpf_core_read(&sb, sizeof(sb), &inode->i_sb) && sb)
		bpf_core_read(&site->dev, sizeof(site->dev), &sb->s_dev);
}

/* Adds the ended wait `w` to the totals of its (lock, stack, flags). */
static __always_inline void close_wait(struct wait *w)
{
	__u64 waited = bpf_ktime_get_ns() - w->start_ns;
	struct lock_site_key at = {
		.lock = w->lock,
		.stack = w->stack,
		.flags = w->flags,
		.holder = w->holder,
		.holder_on_cpu = w->holder_on_cpu,
	};
	struct lock_site *site = bpf_map_lookup_elem(&sites, &at);

	if (!site) {
		/* Once per (lock, stack): what the lock belongs to. */
		struct lock_site fresh = {};

		if (identify_objects)
			identify(&fresh, at.lock, at.flags);
		site = lookup_or_init(&sites, &at, &fresh);
		if (!site)
			return;
	}
	__sync_fetch_and_add(&site->count, 1);
	__sync_fetch_and_add(&site->wait_ns, waited);
	if (site->max_ns < waited)
		site->max_ns = waited;
}

/* The innermost open wait on this lock ends; another lock's end leaves it open. */
static __always_inline void end_in_task(__u64 lock)
{
	struct task_waits *open;
	int level;

	if (!window_open())
		return;
	open = bpf_task_storage_get(&waits_of_task, bpf_get_current_task_btf(), NULL, 0);
	if (!open)
		return;
	for (level = LOCK_LEVELS - 1; level >= 0; level--) {
		if (open->level[level].lock == lock) {
			close_wait(&open->level[level]);
			open->level[level].lock = 0;
			return;
		}
	}
}

static __always_inline void end_by_pid(__u64 lock)
{
	struct wait_key key = { .tid = (__u32)bpf_get_current_pid_tgid() };
	struct wait *open;
	int level;

	if (!window_open())
		return;
	for (level = LOCK_LEVELS - 1; level >= 0; level--) {
		key.level = level;
		open = bpf_map_lookup_elem(&waits, &key);
		if (open && open->lock == lock) {
			close_wait(open);
			bpf_map_delete_elem(&waits, &key);
			return;
		}
	}
}

SEC("tp_btf/contention_begin")
int BPF_PROG(contention_begin_btf, void *lock, unsigned int flags)
{
	begin_in_task((__u64)lock, flags, ctx);
	return 0;
}

SEC("tp_btf/contention_end")
int BPF_PROG(contention_end_btf, void *lock, int ret)
{
	end_in_task((__u64)lock);
	return 0;
}

SEC("tracepoint/lock/contention_begin")
int contention_begin_tp(struct trace_event_raw_contention_begin *ctx)
{
	begin_by_pid((__u64)ctx->lock_addr, ctx->flags, ctx);
	return PASS_ON;
}

SEC("tracepoint/lock/contention_end")
int contention_end_tp(struct trace_event_raw_contention_end *ctx)
{
	end_by_pid((__u64)ctx->lock_addr);
	return PASS_ON;
}
