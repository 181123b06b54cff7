//! `append-grow`: fixed work, a file grown by appends to a size and never
//! cut back, unlike `append`, which truncates every 1 MiB. It measures
//! what growth costs: block or page allocation, the extent tree, the
//! inode's size updates, all of it for a file that only gets longer.

use anyhow::Result;

use super::data::DATA_BLOCK;
use super::{Description, Job, JobContext, JobOutput, WorkerEnv, WorkerFile};
use crate::sys;

pub(super) fn describe() -> Description {
    Description {
        family: "data",
        op: "fixed work: write() of 4 KiB to an O_APPEND file until the worker has appended --grow-size (default 16 MiB); nothing is truncated; one entry per append",
        private: "worker i grows its own file w<i>/f",
        shared: Ok("every worker appends its --grow-size to the one file shared/f"),
        same: Err("appends already all go to the end of one file at --share shared"),
    }
}

pub(super) struct AppendGrow<'a> {
    file: WorkerFile<'a>,
    blocks: u64,
    buf: Box<[u8]>,
}

impl<'a> AppendGrow<'a> {
    pub(super) fn setup(env: &WorkerEnv<'a>) -> Result<AppendGrow<'a>> {
        super::refuse_same(env)?;
        let file = WorkerFile::open(env, libc::O_WRONLY | libc::O_APPEND, 0)?;
        let blocks = env.options.grow_bytes.div_ceil(DATA_BLOCK as u64);
        Ok(AppendGrow { file, blocks, buf: vec![0x47u8; DATA_BLOCK].into_boxed_slice() })
    }
}

impl Job for AppendGrow<'_> {
    fn run(&mut self, ctx: &JobContext<'_>) -> Result<JobOutput> {
        for done in 0..self.blocks {
            if done % 64 == 0 {
                if (ctx.stop)() {
                    anyhow::bail!("stopped");
                }
                (ctx.progress)(done);
            }
            match sys::write(&self.file, &self.buf) {
                Ok(DATA_BLOCK) => {}
                Ok(n) => {
                    anyhow::bail!("write(\"{}\") appended {n} of {DATA_BLOCK} bytes", self.file.name.to_string_lossy())
                }
                Err(e) => {
                    anyhow::bail!("write(\"{}\") failed: {}", self.file.name.to_string_lossy(), sys::errno_text(e))
                }
            }
        }
        (ctx.progress)(self.blocks);
        Ok(JobOutput { entries: self.blocks, bytes: self.blocks * DATA_BLOCK as u64, walk: None })
    }
}
