/* SPDX-License-Identifier: (MIT OR Apache-2.0) OR GPL-2.0 */
/*
 * The kernel types fsscale's programs read, and only the members they use.
 * Every type is marked preserve_access_index, so each member access is a
 * CO-RE relocation: the loader rewrites its offset against the running
 * kernel's own BTF (/sys/kernel/btf/vmlinux), whatever the layout there.
 * A full header from `bpftool btf dump file /sys/kernel/btf/vmlinux format c`
 * works as well; this one is short enough to review.
 */
#ifndef FSSCALE_VMLINUX_H
#define FSSCALE_VMLINUX_H

typedef unsigned char __u8;
typedef short int __s16;
typedef short unsigned int __u16;
typedef int __s32;
typedef unsigned int __u32;
typedef long long int __s64;
typedef long long unsigned int __u64;
typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef int pid_t;
typedef __u32 dev_t;
typedef _Bool bool;
enum { false = 0, true = 1 };

enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PERCPU_HASH = 5,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_STACK_TRACE = 7,
	BPF_MAP_TYPE_TASK_STORAGE = 29,
};

enum {
	BPF_ANY = 0,
	BPF_NOEXIST = 1,
};

enum {
	BPF_F_NO_PREALLOC = 1,
};

enum {
	BPF_LOCAL_STORAGE_GET_F_CREATE = 1,
};

#ifndef BPF_NO_PRESERVE_ACCESS_INDEX
#pragma clang attribute push (__attribute__((preserve_access_index)), apply_to = record)
#endif

struct pt_regs;

struct task_struct {
	unsigned int __state;
	int on_cpu;
	pid_t pid;
	pid_t tgid;
};

/* Before Linux 5.14 the state was `state`; CO-RE takes the flavour that exists. */
struct task_struct___pre_5_14 {
	long int state;
};

/* Lock members are located (their offsets); of sleeping locks, the owner word is read. */
typedef struct spinlock {
	int opaque;
} spinlock_t;

typedef struct {
	__s64 counter;
} atomic64_t;
typedef atomic64_t atomic_long_t;

/* A sleeping lock's owner word: the holding task, its low bits flags. */
struct rw_semaphore {
	atomic_long_t owner;
};

struct mutex {
	atomic_long_t owner;
};

struct address_space {
	long int opaque;
};

struct super_block {
	dev_t s_dev;
	struct dentry *s_root;
	spinlock_t s_inode_list_lock;
};

struct inode {
	unsigned short i_mode;
	struct super_block *i_sb;
	struct address_space *i_mapping;
	long unsigned int i_ino;
	spinlock_t i_lock;
	struct rw_semaphore i_rwsem;
	struct address_space i_data;
};

struct lockref {
	spinlock_t lock;
};

struct qstr {
	const unsigned char *name;
};

struct dentry {
	struct lockref d_lockref;
	struct qstr d_name;
	struct inode *d_inode;
	struct super_block *d_sb;
	union shortname_store {
		unsigned char string[40];
	} d_shortname;
};

/* Before Linux 6.14 a dentry's inline name was `d_iname`. */
struct dentry___pre_6_14 {
	unsigned char d_iname[32];
};

/* The classic tracepoints' records, for kernels without BTF raw tracepoints. */
struct trace_event_raw_contention_begin {
	void *lock_addr;
	unsigned int flags;
};

struct trace_event_raw_contention_end {
	void *lock_addr;
	int ret;
};

struct trace_event_raw_sched_switch {
	pid_t prev_pid;
	long int prev_state;
	pid_t next_pid;
};

struct trace_event_raw_sched_wakeup_template {
	pid_t pid;
};

struct trace_event_raw_sched_process_fork {
	pid_t parent_pid;
	pid_t child_pid;
};

struct trace_event_raw_sys_enter {
	long int id;
};

struct trace_event_raw_sys_exit {
	long int id;
};

#ifndef BPF_NO_PRESERVE_ACCESS_INDEX
#pragma clang attribute pop
#endif

#endif
