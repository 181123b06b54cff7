//! A small assembler for eBPF (Documentation/bpf/standardization/
//! instruction-set.rst): the handful of instructions fsscale's tracepoint
//! programs use, with named jump targets resolved at the end.
//!
//! The programs are written with it in Rust rather than compiled from C,
//! so that building fsscale needs no clang, no libbpf and no object file
//! checked in; the kernel's verifier checks them when they load.

use std::collections::HashMap;

/// One 8-byte instruction: opcode, registers (dst in the low nibble), offset, immediate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Insn {
    pub code: u8,
    pub regs: u8,
    pub off: i16,
    pub imm: i32,
}

/// Registers: r0 holds return values, r1–r5 arguments (clobbered by
/// calls), r6–r9 survive calls, r10 is the read-only frame pointer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reg(pub u8);

pub const R0: Reg = Reg(0);
pub const R1: Reg = Reg(1);
pub const R2: Reg = Reg(2);
pub const R3: Reg = Reg(3);
pub const R4: Reg = Reg(4);
pub const R6: Reg = Reg(6);
pub const R7: Reg = Reg(7);
pub const R8: Reg = Reg(8);
pub const R9: Reg = Reg(9);
pub const FP: Reg = Reg(10);

/// Access sizes.
#[derive(Clone, Copy, Debug)]
pub enum Size {
    U32 = 0x00,
    U64 = 0x18,
}

/// Conditional jumps (64-bit compare).
#[derive(Clone, Copy, Debug)]
pub enum Cond {
    Eq = 0x10,
    Gt = 0x20,
    Ge = 0x30,
    Set = 0x40,
    Ne = 0x50,
    SignedLt = 0xc0,
}

/// Kernel helpers by number (include/uapi/linux/bpf.h, `__BPF_FUNC_MAPPER`).
#[derive(Clone, Copy, Debug)]
pub enum Helper {
    MapLookup = 1,
    MapUpdate = 2,
    MapDelete = 3,
    KtimeNs = 5,
    CurrentPidTgid = 14,
    StackId = 27,
    ProbeReadKernel = 113,
}

const LD: u8 = 0x00;
const LDX: u8 = 0x01;
const ST: u8 = 0x02;
const STX: u8 = 0x03;
const JMP: u8 = 0x05;
const ALU64: u8 = 0x07;
const MEM: u8 = 0x60;
const ATOMIC: u8 = 0xc0;
const IMM: u8 = 0x00;
const SRC_REG: u8 = 0x08;
const CALL: u8 = 0x80;
const EXIT: u8 = 0x90;
const MOV: u8 = 0xb0;
const ADD: u8 = 0x00;
const SUB: u8 = 0x10;
const AND: u8 = 0x50;
/// `ld_imm64`'s source register for a map's descriptor, and for an address inside an array map's value.
const PSEUDO_MAP_FD: u8 = 1;
const PSEUDO_MAP_VALUE: u8 = 2;

/// A program being written: instructions, and jumps waiting for their labels.
#[derive(Default)]
pub struct Asm {
    insns: Vec<Insn>,
    labels: HashMap<&'static str, usize>,
    jumps: Vec<(usize, &'static str)>,
}

fn insn(code: u8, dst: Reg, src: Reg, off: i16, imm: i32) -> Insn {
    Insn { code, regs: (src.0 << 4) | dst.0, off, imm }
}

impl Asm {
    pub fn new() -> Asm {
        Asm::default()
    }

    fn push(&mut self, i: Insn) -> &mut Asm {
        self.insns.push(i);
        self
    }

    /// `dst = imm` (sign-extended).
    pub(crate) fn mov_imm(&mut self, dst: Reg, imm: i32) -> &mut Asm {
        self.push(insn(ALU64 | MOV | IMM, dst, R0, 0, imm))
    }

    /// `dst = src`.
    pub(crate) fn mov(&mut self, dst: Reg, src: Reg) -> &mut Asm {
        self.push(insn(ALU64 | MOV | SRC_REG, dst, src, 0, 0))
    }

    pub(crate) fn add_imm(&mut self, dst: Reg, imm: i32) -> &mut Asm {
        self.push(insn(ALU64 | ADD | IMM, dst, R0, 0, imm))
    }

    pub fn sub(&mut self, dst: Reg, src: Reg) -> &mut Asm {
        self.push(insn(ALU64 | SUB | SRC_REG, dst, src, 0, 0))
    }

    pub fn add(&mut self, dst: Reg, src: Reg) -> &mut Asm {
        self.push(insn(ALU64 | ADD | SRC_REG, dst, src, 0, 0))
    }

    pub(crate) fn and_imm(&mut self, dst: Reg, imm: i32) -> &mut Asm {
        self.push(insn(ALU64 | AND | IMM, dst, R0, 0, imm))
    }

    /// `dst = *(size *)(src + off)`.
    pub fn load(&mut self, size: Size, dst: Reg, src: Reg, off: i16) -> &mut Asm {
        self.push(insn(LDX | MEM | size as u8, dst, src, off, 0))
    }

    /// `*(size *)(dst + off) = src`.
    pub fn store(&mut self, size: Size, dst: Reg, off: i16, src: Reg) -> &mut Asm {
        self.push(insn(STX | MEM | size as u8, dst, src, off, 0))
    }

    /// `*(size *)(dst + off) = imm`.
    pub(crate) fn store_imm(&mut self, size: Size, dst: Reg, off: i16, imm: i32) -> &mut Asm {
        self.push(insn(ST | MEM | size as u8, dst, R0, off, imm))
    }

    /// `*(u64 *)(dst + off) += src`, atomically: counters other CPUs add to at once.
    pub(crate) fn atomic_add(&mut self, dst: Reg, off: i16, src: Reg) -> &mut Asm {
        self.push(insn(STX | ATOMIC | Size::U64 as u8, dst, src, off, ADD as i32))
    }

    /// `dst = the map` (its descriptor, which the kernel turns into its address).
    pub(crate) fn load_map(&mut self, dst: Reg, map_fd: i32) -> &mut Asm {
        self.push(insn(LD | IMM | Size::U64 as u8, dst, Reg(PSEUDO_MAP_FD), 0, map_fd)).push(insn(0, R0, R0, 0, 0))
    }

    /// `dst = &value[offset]` of a one-entry array map: a global variable, without a lookup call.
    pub(crate) fn load_map_value(&mut self, dst: Reg, map_fd: i32, offset: i32) -> &mut Asm {
        self.push(insn(LD | IMM | Size::U64 as u8, dst, Reg(PSEUDO_MAP_VALUE), 0, map_fd))
            .push(insn(0, R0, R0, 0, offset))
    }

    /// `if dst <cond> imm goto label`.
    pub(crate) fn jump_if(&mut self, cond: Cond, dst: Reg, imm: i32, label: &'static str) -> &mut Asm {
        self.jumps.push((self.insns.len(), label));
        self.push(insn(JMP | cond as u8 | IMM, dst, R0, 0, imm))
    }

    /// `if dst <cond> src goto label`.
    pub(crate) fn jump_if_reg(&mut self, cond: Cond, dst: Reg, src: Reg, label: &'static str) -> &mut Asm {
        self.jumps.push((self.insns.len(), label));
        self.push(insn(JMP | cond as u8 | SRC_REG, dst, src, 0, 0))
    }

    pub(crate) fn jump(&mut self, label: &'static str) -> &mut Asm {
        self.jumps.push((self.insns.len(), label));
        self.push(insn(JMP, R0, R0, 0, 0))
    }

    /// Marks where `label` jumps to: the next instruction.
    pub fn label(&mut self, label: &'static str) -> &mut Asm {
        let previous = self.labels.insert(label, self.insns.len());
        assert!(previous.is_none(), "label {label} defined twice");
        self
    }

    pub fn call(&mut self, helper: Helper) -> &mut Asm {
        self.push(insn(JMP | CALL, R0, R0, 0, helper as i32))
    }

    pub fn exit(&mut self) -> &mut Asm {
        self.push(insn(JMP | EXIT, R0, R0, 0, 0))
    }

    /// `r0 = 1; exit`: a tracepoint program's only return. A program attached
    /// through perf that returns 0 makes the kernel drop the event for every
    /// perf consumer of the tracepoint on that CPU (`perf_trace_run_bpf_submit`),
    /// so another tool's `perf stat -e lock:contention_begin` would count
    /// nothing; 1 passes it on, as bpftrace's programs do.
    pub(crate) fn pass_on(&mut self) -> &mut Asm {
        self.mov_imm(R0, 1).exit()
    }

    /// The instructions, jumps resolved. Panics on a label never defined:
    /// the programs are fixed, so that is fsscale's bug, caught by its tests.
    pub fn finish(mut self) -> Vec<Insn> {
        for (at, label) in std::mem::take(&mut self.jumps) {
            let target = *self.labels.get(label).unwrap_or_else(|| panic!("label {label} is not defined"));
            let off = target as i64 - at as i64 - 1;
            self.insns[at].off = i16::try_from(off).expect("jump within 32k instructions");
        }
        self.insns
    }
}

/// The instructions as the kernel reads them.
pub(crate) fn encode(insns: &[Insn]) -> Vec<u64> {
    insns
        .iter()
        .map(|i| {
            let mut bytes = [0u8; 8];
            bytes[0] = i.code;
            bytes[1] = i.regs;
            bytes[2..4].copy_from_slice(&i.off.to_ne_bytes());
            bytes[4..8].copy_from_slice(&i.imm.to_ne_bytes());
            u64::from_ne_bytes(bytes)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instructions_encode_as_the_kernel_reads_them() {
        let mut a = Asm::new();
        a.mov_imm(R0, 0).exit();
        // r0 = 0: BPF_ALU64|BPF_MOV|BPF_K = 0xb7; exit = 0x95.
        assert_eq!(a.finish(), vec![insn(0xb7, R0, R0, 0, 0), insn(0x95, R0, R0, 0, 0)]);
        let mut a = Asm::new();
        a.load(Size::U32, R1, R6, 24).store(Size::U64, FP, -8, R0).atomic_add(R0, 8, R8);
        let code: Vec<(u8, u8, i16)> = a.finish().iter().map(|i| (i.code, i.regs, i.off)).collect();
        // ldxw r1, [r6+24]: 0x61, src 6 dst 1; stxdw [r10-8], r0: 0x7b; xadd dw: 0xdb.
        assert_eq!(code, vec![(0x61, 0x61, 24), (0x7b, 0x0a, -8), (0xdb, 0x80, 8)]);
    }

    #[test]
    fn jumps_land_on_their_labels_forward_and_back() {
        let mut a = Asm::new();
        a.label("top").jump_if(Cond::Eq, R0, 0, "out").mov_imm(R1, 1).jump("top").label("out").pass_on();
        let insns = a.finish();
        // From instruction 0, "out" is instruction 3: two ahead of the next.
        assert_eq!((insns[0].code, insns[0].off), (0x15, 2));
        assert_eq!((insns[2].code, insns[2].off), (0x05, -3));
    }

    #[test]
    fn map_references_take_two_instructions() {
        let mut a = Asm::new();
        a.load_map(R1, 7).load_map_value(R2, 9, 16);
        let insns = a.finish();
        assert_eq!(insns.len(), 4);
        assert_eq!((insns[0].code, insns[0].regs, insns[0].imm), (0x18, 0x11, 7));
        assert_eq!((insns[2].regs, insns[2].imm, insns[3].imm), (0x22, 9, 16));
        assert_eq!(encode(&insns[..1]), vec![u64::from_ne_bytes([0x18, 0x11, 0, 0, 7, 0, 0, 0])]);
    }

    #[test]
    #[should_panic(expected = "label nowhere is not defined")]
    fn a_missing_label_is_caught_by_the_tests() {
        let mut a = Asm::new();
        a.jump("nowhere");
        a.finish();
    }
}
