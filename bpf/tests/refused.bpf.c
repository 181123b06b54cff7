// SPDX-License-Identifier: (MIT OR Apache-2.0) OR GPL-2.0
/*
 * A program the verifier must refuse: it reads a map value without
 * checking that the lookup found one. fsscale's tests load it to check
 * that the refusal names this file's line.
 */
#include "../common.bpf.h"

SEC("tp_btf/sched_wakeup")
int BPF_PROG(sched_wakeup_btf, struct task_struct *p)
{
	__u32 tid = p->pid;
	__u8 *seen = bpf_map_lookup_elem(&tasks, &tid);

	return *seen; /* refused: seen may be NULL */
}
