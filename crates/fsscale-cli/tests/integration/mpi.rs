//! Many clients: real `mpirun` jobs of the binary built with `--features
//! mpi` (`.ci/run` runs every test in that build), and what a
//! binary without the feature says when a launcher starts it.

use crate::util::*;

#[test]
fn placement_outside_an_mpi_job_is_refused() {
    let env = TestEnv::new();
    let out = env.run(&["stat", "--placement", "pack"]);
    assert_one_line_error(&out, "--placement picks the ranks of an MPI run");
}

#[test]
fn a_binary_without_mpi_refuses_to_be_one_of_many_ranks() {
    // This build's own binary; in a build with MPI, one built without it,
    // which `FSSCALE_TEST_WITHOUT_MPI` names (.ci/run builds one).
    let mut cmd = fsscale();
    if cfg!(feature = "mpi") {
        let test = "a_binary_without_mpi_refuses_to_be_one_of_many_ranks";
        let Some(without) = std::env::var_os("FSSCALE_TEST_WITHOUT_MPI") else {
            let missing = "FSSCALE_TEST_WITHOUT_MPI names no fsscale built without --features mpi (.ci/run builds one)";
            prerequisite(false, test, missing);
            return;
        };
        let mut other = std::process::Command::new(without);
        other.envs(cmd.get_envs().filter_map(|(k, v)| Some((k, v?))));
        cmd = other;
    }
    let env = TestEnv::new();
    cmd.env("OMPI_COMM_WORLD_SIZE", "4").args(["run", "stat", "-n", "1", "-d", "0.05", "--dir"]).arg(&env.dir);
    let out = cmd.output().unwrap();
    assert_one_line_error(&out, "built without MPI");
    assert!(stderr(&out).contains("--features mpi"), "{}", stderr(&out));
    assert!(env.leftovers().is_empty());
}

#[cfg(feature = "mpi")]
mod jobs {
    use std::path::Path;
    use std::process::{Command, Output};

    use super::*;
    use fsscale::results::ResultsFile;
    use fsscale::workloads::{Share, Workload};

    /// `mpirun -np RANKS [WRAPPER] fsscale run ARGS` with the quick settings of [`TestEnv::run`].
    fn mpirun(env: &TestEnv, ranks: usize, wrapper: Option<&Path>, args: &[&str]) -> Command {
        let mut cmd = Command::new("mpirun");
        cmd.args(["--allow-run-as-root", "--oversubscribe", "-np", &ranks.to_string()]);
        cmd.args(wrapper);
        cmd.arg(env!("CARGO_BIN_EXE_fsscale"));
        cmd.arg("run").args(["-n", "1", "--duration", "0.05", "--warmup", "0", "--warmup-runs", "0"]);
        cmd.args(args).arg("--dir").arg(&env.dir).arg("-o").arg(&env.output);
        cmd.env("FSSCALE_CACHE_DIR", std::env::temp_dir().join("fsscale-test-cache"));
        cmd.env(OWNER_VARIABLE, std::process::id().to_string());
        cmd.stdin(std::process::Stdio::null());
        cmd
    }

    /// Jobs of several ranks on a small machine: one at a time.
    fn one_job_at_a_time() -> std::sync::MutexGuard<'static, ()> {
        static JOBS: std::sync::Mutex<()> = std::sync::Mutex::new(());
        JOBS.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn has_mpirun(test: &str) -> bool {
        let found = Command::new("mpirun").arg("--version").output().is_ok_and(|o| o.status.success());
        prerequisite(found, test, "mpirun not found (apt-get install openmpi-bin)")
    }

    /// The process of rank `rank` of the job running now (OpenMPI names it in the environment).
    fn rank_pid(rank: usize) -> Option<i32> {
        let wanted = format!("OMPI_COMM_WORLD_RANK={rank}");
        processes_running(env!("CARGO_BIN_EXE_fsscale")).into_iter().find(|pid| {
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            environ.split(|&b| b == 0).any(|v| v == wanted.as_bytes())
        })
    }

    fn run(env: &TestEnv, ranks: usize, args: &[&str]) -> Output {
        mpirun(env, ranks, None, args).output().expect("run mpirun")
    }

    /// Every point: the ranks that served it are distinct, rank 0 first, and
    /// each worker's ops add up to the run's (each did some, unless stonewalled).
    fn assert_ranks_add_up(doc: &ResultsFile, each_works: bool) {
        for p in &doc.points {
            let ranks = p.ranks.as_ref().expect("the ranks of every point");
            assert_eq!(ranks.len(), p.workers);
            assert_eq!(ranks[0], 0);
            let mut distinct = ranks.clone();
            distinct.sort_unstable();
            distinct.dedup();
            assert_eq!(distinct.len(), p.workers, "{ranks:?}");
            for run in &p.runs {
                assert_eq!(run.per_worker_ops.len(), p.workers);
                assert_eq!(run.per_worker_ops.iter().sum::<u64>(), run.ops);
                let worked = run.per_worker_ops.iter().all(|&n| n > 0);
                assert!(worked || !each_works, "every rank worked: {:?}", run.per_worker_ops);
            }
        }
    }

    #[test]
    fn a_sweep_over_ranks_adds_up_and_leaves_nothing() {
        if !has_mpirun("a_sweep_over_ranks_adds_up_and_leaves_nothing") {
            return;
        }
        let _job = one_job_at_a_time();
        let env = TestEnv::new();
        let out = run(&env, 4, &["stat", "creat-unlink", "--share", "private,shared", "-n", "2"]);
        assert_success(&out);
        let doc = env.results();
        let cluster = doc.cluster.as_ref().expect("the job is recorded");
        assert_eq!(cluster.ranks, 4);
        assert_eq!(cluster.hosts.len(), 4);
        assert!(cluster.library.contains("MPI"), "{}", cluster.library);
        // Default sweep: 1, powers of two, all ranks; both workloads, both sharing levels.
        let mut seen: Vec<(Workload, Share, usize)> =
            doc.points.iter().map(|p| (p.workload, p.share, p.workers)).collect();
        seen.sort();
        assert_eq!(seen.len(), 12);
        assert!(seen.iter().all(|(_, _, n)| [1, 2, 4].contains(n)));
        assert!(doc.points.iter().all(|p| p.runs.len() == 2));
        // Whether a rank made an op in a 50 ms window, or even saw it open
        // (ranks close their windows together, and a busy machine kept one
        // off the CPUs through all of one), is the scheduler's; that each
        // rank's worker is recorded is not.
        assert_ranks_add_up(&doc, false);
        for run in doc.points.iter().flat_map(|p| p.runs.iter().map(move |r| (p.workers, r))) {
            let (workers, run) = run;
            assert_eq!(run.sched.len(), workers, "one worker record a rank");
        }
        // Every run says what each node did (one node here).
        for p in &doc.points {
            for run in &p.runs {
                let nodes = run.nodes.as_ref().expect("per-node totals");
                assert_eq!(nodes.len(), 1);
                assert_eq!((nodes[0].ranks, nodes[0].ops), (p.workers, run.ops));
            }
        }
        // Rank 0 alone wrote results and tables: one table header per workload.
        let text = stdout(&out);
        assert!(text.contains(&format!("ranks at 4 workers (private): {}: 4 ranks, ", cluster.hosts[0])), "{text}");
        assert_eq!(text.matches("stat: fstatat()").count(), 1, "{text}");
        // mpirun forwards stdout and stderr apart: the results line follows the tables on stdout.
        assert!(text.ends_with(&format!("\nresults: {}\n", env.output.display())), "{text}");
        assert!(!stderr(&out).contains("results:"), "{}", stderr(&out));
        assert!(env.leftovers().is_empty(), "{:?}", env.leftovers());
    }

    #[test]
    fn an_open_loop_splits_its_rate_over_the_ranks_and_merges_their_histograms() {
        if !has_mpirun("an_open_loop_splits_its_rate_over_the_ranks_and_merges_their_histograms") {
            return;
        }
        let _job = one_job_at_a_time();
        let env = TestEnv::new();
        let out = run(&env, 3, &["stat", "-j", "3", "--rate", "900", "-n", "1", "--duration", "0.1"]);
        assert_success(&out);
        let doc = env.results();
        let p = &doc.points[0];
        let r = &p.runs[0];
        let o = r.open_loop.as_ref().expect("the ranks' open loops, merged");
        // Each rank's worker asked a third of the point's rate; merged, all of it.
        assert_eq!(p.rate.map(|r| r.ops_per_s()), Some(900.0));
        assert!((o.asked_ops_per_s - 900.0).abs() < 1e-9, "{}", o.asked_ops_per_s);
        // Each rank's histograms added: every op timed three ways.
        assert_eq!((o.service.count, o.lag.count), (o.response.count, o.response.count));
        assert!(o.response.sum_ns >= o.service.sum_ns);
        assert_ranks_add_up(&doc, false);
        assert!(env.leftovers().is_empty(), "{:?}", env.leftovers());
    }

    #[test]
    fn an_objective_search_sends_each_probe_to_the_ranks() {
        if !has_mpirun("an_objective_search_sends_each_probe_to_the_ranks") {
            return;
        }
        let _job = one_job_at_a_time();
        let env = TestEnv::new();
        let out = run(&env, 2, &["stat", "-j", "2", "--share", "private", "--slo", "p99=5ms", "-n", "1"]);
        assert_success(&out);
        let doc = env.results();
        let objectives = &doc.settings.open_loop.as_ref().unwrap().objectives;
        let points: Vec<&fsscale::results::Point> = doc.points.iter().collect();
        let found = fsscale::results::objective::searches(&points, objectives);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].search.next, None, "the search ran to its end");
        assert!(!found[0].probes.is_empty());
        for &i in &found[0].probes {
            // Each probe ran on both ranks: their halves of the rate, merged.
            let (p, o) = (points[i], points[i].runs[0].open_loop.as_ref().expect("an open loop"));
            assert_eq!(p.ranks.as_ref().map(Vec::len), Some(2));
            assert!((o.asked_ops_per_s - p.rate.unwrap().ops_per_s()).abs() < 1e-6, "{}", o.asked_ops_per_s);
        }
        assert_ranks_add_up(&doc, false);
        assert!(env.leftovers().is_empty(), "{:?}", env.leftovers());
    }

    #[test]
    fn every_rank_collects_its_profiles_in_the_kernel() {
        if !has_mpirun("every_rank_collects_its_profiles_in_the_kernel") || !needs_root("profiles over ranks") {
            return;
        }
        let _job = one_job_at_a_time();
        let env = TestEnv::new();
        let out =
            run(&env, 2, &["creat-unlink", "--share", "shared", "-j", "2", "-n", "1", "--profile", "locks,offcpu"]);
        assert_success(&out);
        let doc = env.results();
        assert_eq!(doc.settings.instruments.via.map(|c| c.name()), Some("bpf"));
        let run = &doc.points.iter().find(|p| p.workers == 2).expect("the 2-rank point").runs[0];
        let locks = run.sections.locks.as_ref().expect("the ranks' lock profiles, merged");
        let offcpu = run.sections.offcpu.as_ref().expect("the ranks' off-CPU profiles, merged");
        // A merged profile is BPF's only if every rank's was: the follower chose BPF on its node too.
        assert_eq!((locks.method.name(), offcpu.method.name()), ("bpf", "bpf"));
        assert!(locks.programs.is_some_and(|p| p.runs > 0), "{:?}", locks.programs);
        assert!(env.leftovers().is_empty(), "{:?}", env.leftovers());
    }

    /// A wrapper script `name` that runs the ranks `when` selects (a test on
    /// `$OMPI_COMM_WORLD_RANK`) through `unshare ARGS sh -c 'SETUP && exec "$0" "$@"'`.
    fn rank_wrapper(env: &TestEnv, name: &str, when: &str, unshare: &str, setup: &str) -> std::path::PathBuf {
        let wrapper = env.root.path().join(name);
        let script = format!(
            "#!/bin/sh\nif [ \"$OMPI_COMM_WORLD_RANK\" {when} ]; then\n  exec unshare {unshare} sh -c \
             '{setup} && exec \"$0\" \"$@\"' \"$@\"\nfi\nexec \"$@\"\n"
        );
        std::fs::write(&wrapper, script).unwrap();
        std::fs::set_permissions(&wrapper, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        wrapper
    }

    /// Ranks 2 and up on a second "node": a UTS namespace whose host name
    /// differs, which is all MPI knows of nodes.
    fn two_nodes(env: &TestEnv) -> std::path::PathBuf {
        rank_wrapper(env, "two-nodes.sh", "-ge 2", "-u", "hostname fsscale-node-b")
    }

    #[test]
    fn placement_spreads_over_nodes_or_packs_one() {
        if !has_mpirun("placement_spreads_over_nodes_or_packs_one")
            || !needs_root("placement_spreads_over_nodes_or_packs_one")
        {
            return;
        }
        let _job = one_job_at_a_time();
        for (placement, two) in [("spread", [0, 2]), ("pack", [0, 1])] {
            let env = TestEnv::new();
            let wrapper = two_nodes(&env);
            let out = mpirun(&env, 4, Some(&wrapper), &["stat", "--placement", placement]).output().unwrap();
            assert_success(&out);
            let doc = env.results();
            let cluster = doc.cluster.as_ref().unwrap();
            assert_eq!(cluster.hosts[2], "fsscale-node-b");
            assert_eq!(cluster.nodes().len(), 2);
            let at = |n: usize| doc.points.iter().find(|p| p.workers == n).unwrap();
            assert_eq!(at(2).ranks.as_deref(), Some(&two[..]), "{placement}");
            let nodes = at(2).runs[0].nodes.as_ref().unwrap();
            assert_eq!(nodes.len(), if placement == "spread" { 2 } else { 1 }, "{placement}: {nodes:?}");
            let all = at(4).runs[0].nodes.as_ref().unwrap();
            assert_eq!(all.iter().map(|n| n.ranks).collect::<Vec<_>>(), [2, 2]);
            assert_eq!(all.iter().map(|n| n.ops).sum::<u64>(), at(4).runs[0].ops);
            assert!(stdout(&out).contains("fsscale-node-b: 2 ranks"), "{}", stdout(&out));
            assert!(env.leftovers().is_empty());
        }
    }

    #[test]
    fn mdtest_phases_over_ranks_do_every_item_once() {
        if !has_mpirun("mdtest_phases_over_ranks_do_every_item_once") {
            return;
        }
        let _job = one_job_at_a_time();
        for stonewall in [None, Some("0.001")] {
            let env = TestEnv::new();
            let mut args = vec!["mdtest", "-j", "1,3", "--share", "private,shared", "--items", "400"];
            args.extend(stonewall.iter().flat_map(|s| ["--stonewall", *s]));
            let out = run(&env, 3, &args);
            assert_success(&out);
            let doc = env.results();
            assert_ranks_add_up(&doc, stonewall.is_none());
            for p in &doc.points {
                for r in &p.runs {
                    let times = r.completion_s.as_ref().unwrap();
                    assert_eq!(times.len(), p.workers);
                    assert_eq!(r.elapsed_s, times.iter().cloned().fold(0.0, f64::max), "the slowest rank's time");
                    match stonewall {
                        None => assert_eq!(r.ops, 400 * p.workers as u64, "{} x{}", p.workload, p.workers),
                        Some(_) => assert!(r.ops <= 400 * p.workers as u64),
                    }
                }
            }
            // Stonewalled or not, every item made was removed: nothing left.
            assert!(env.leftovers().is_empty(), "{stonewall:?}: {:?}", env.leftovers());
        }
    }

    #[test]
    fn ranks_walk_one_tree_together_counting_each_entry_once() {
        if !has_mpirun("ranks_walk_one_tree_together_counting_each_entry_once") {
            return;
        }
        let _job = one_job_at_a_time();
        // 2 and 4 ranks walking one tree (one job of 4: its points x2 and
        // x4). Every entry is counted once, whoever walks it, and each
        // walker's messages are recorded. How evenly the work spreads is the
        // scheduler's on two CPUs: bench/walk-balance.sh measures it at 16 ranks.
        for (ranks, workers) in [(4, "2,4")] {
            let env = TestEnv::new();
            let out = run(&env, ranks, &["traverse", "--share", "shared", "--scale", "0.2", "-j", workers]);
            assert_success(&out);
            let doc = env.results();
            let entries = doc.settings.untar.as_ref().unwrap().entries;
            assert!(entries > 5000, "a tree worth sharing: {entries}");
            for p in &doc.points {
                for run in &p.runs {
                    assert_eq!(run.ops, entries, "{ranks} ranks, x{}: each entry counted once", p.workers);
                    assert_eq!(run.per_worker_ops.len(), p.workers);
                    assert_eq!(run.per_worker_ops.iter().sum::<u64>(), entries);
                    assert_eq!(run.walk_messages.len(), p.workers, "each walker's messages recorded");
                }
            }
            assert!(stdout(&out).contains("work share"), "{}", stdout(&out));
            assert!(env.leftovers().is_empty(), "{:?}", env.leftovers());
        }
    }

    #[test]
    fn what_ranks_cannot_do_is_refused_with_the_reason() {
        if !has_mpirun("what_ranks_cannot_do_is_refused_with_the_reason") {
            return;
        }
        let _job = one_job_at_a_time();
        let env = TestEnv::new();
        let cases: [(&[&str], &str); 4] = [
            (&["stat", "--memory-limit", "64M"], "--memory-limit limits this machine's processes: under MPI"),
            (&["stat", "--mode", "thread"], "every worker is a rank"),
            (&["stat", "-j", "1,4"], "the job has 2 ranks"),
            (&["dup-close", "--share", "same"], "ranks (separate processes) cannot"),
        ];
        for (args, reason) in cases {
            let out = run(&env, 2, args);
            assert!(!out.status.success(), "{args:?}");
            let text = stderr(&out);
            let ours: Vec<&str> = text
                .lines()
                .filter(|l| l.starts_with("fsscale:") && !is_progress(l) && !is_about_the_machine(l))
                .collect();
            assert_eq!(ours.len(), 1, "rank 0 alone speaks, once: {text}");
            assert!(ours[0].contains(reason), "{args:?}: {text}");
        }
        assert!(env.leftovers().is_empty());
    }

    #[test]
    fn a_dir_one_rank_cannot_see_is_named_with_its_host() {
        if !has_mpirun("a_dir_one_rank_cannot_see_is_named_with_its_host")
            || !needs_root("a_dir_one_rank_cannot_see_is_named_with_its_host")
        {
            return;
        }
        let _job = one_job_at_a_time();
        let env = TestEnv::new();
        // Rank 2 gets a private mount namespace with an empty tmpfs over --dir: a node that does not share it.
        let mount = format!("mount -t tmpfs none {}", env.dir.display());
        let wrapper = rank_wrapper(&env, "private-dir.sh", "= 2", "-m --propagation private", &mount);
        let out = mpirun(&env, 4, Some(&wrapper), &["stat"]).output().unwrap();
        assert!(!out.status.success());
        let text = stderr(&out);
        let host = fsscale::results::Host::detect().hostname;
        assert!(
            text.contains(&format!("rank 2 on {host}: cannot see the scratch directory")) && text.contains("--dir"),
            "{text}"
        );
        let doc = env.results();
        assert_eq!(doc.status, fsscale::results::Status::Failed);
        assert!(env.leftovers().is_empty(), "{:?}", env.leftovers());
    }

    #[test]
    fn a_killed_rank_ends_the_job_with_finished_runs_on_disk_and_nothing_left() {
        if !has_mpirun("a_killed_rank_ends_the_job_with_finished_runs_on_disk_and_nothing_left") {
            return;
        }
        let _job = one_job_at_a_time();
        let env = TestEnv::new();
        let mut job =
            mpirun(&env, 4, None, &["creat-unlink", "-j", "4", "-n", "50", "--duration", "0.3"]).spawn().unwrap();
        // Once a run is on disk, kill rank 2 mid-run.
        wait_until("a finished run", || {
            ResultsFile::load(&env.output).is_ok_and(|d| d.points.iter().any(|p| !p.runs.is_empty()))
        });
        let rank2 = rank_pid(2);
        let _ = fsscale::sys::send_signal(rank2.expect("rank 2 runs"), libc::SIGKILL);
        let status = job.wait().unwrap();
        assert!(!status.success());
        let doc = ResultsFile::load(&env.output).expect("the results survive");
        assert!(!doc.points[0].runs.is_empty(), "finished runs are on disk");
        // Rank 0 (or, if mpirun killed it first, its warden) removes every rank's files.
        wait_until("the scratch removed", || env.leftovers().is_empty());
        wait_until("no warden left", || processes_running("fsscale scratch-warden").is_empty());
        let tmp: Vec<String> = entries(env.root.path()).into_iter().filter(|n| n.ends_with(".tmp")).collect();
        assert!(tmp.is_empty(), "{tmp:?}");
    }

    /// Whether process `pid` holds a directory of the walked tree open (its walker is listing one).
    fn lists_a_tree_directory(pid: i32, dir: &Path) -> bool {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return false };
        fds.filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
            .any(|target| target.starts_with(dir) && target.components().any(|c| c.as_os_str() == "tree"))
    }

    #[test]
    fn a_rank_killed_mid_walk_fails_the_job_and_leaves_nothing() {
        if !has_mpirun("a_rank_killed_mid_walk_fails_the_job_and_leaves_nothing") {
            return;
        }
        let _job = one_job_at_a_time();
        let env = TestEnv::new();
        let args = ["traverse", "-j", "4", "--share", "shared", "--stat", "--scale", "0.05"];
        let args = [&args[..], &["-n", "400", "--stall-timeout", "5"]].concat();
        let mut job = mpirun(&env, 4, None, &args).stdout(std::process::Stdio::null()).spawn().unwrap();
        wait_until("a finished run", || {
            ResultsFile::load(&env.output).is_ok_and(|d| d.points.iter().any(|p| !p.runs.is_empty()))
        });
        let rank1 = rank_pid(1).expect("rank 1 runs");
        // Catch rank 1 inside a walk: stopped while its walker holds one of
        // the tree's directories open. Then kill it there.
        let started = std::time::Instant::now();
        let caught = loop {
            let _ = fsscale::sys::send_signal(rank1, libc::SIGSTOP);
            std::thread::sleep(std::time::Duration::from_millis(2));
            if lists_a_tree_directory(rank1, &env.dir) {
                break true;
            }
            let _ = fsscale::sys::send_signal(rank1, libc::SIGCONT);
            if started.elapsed() > std::time::Duration::from_secs(60) || job.try_wait().unwrap().is_some() {
                break false;
            }
            std::thread::sleep(std::time::Duration::from_millis(3));
        };
        assert!(caught, "rank 1 was never seen listing a directory of the tree");
        let _ = fsscale::sys::send_signal(rank1, libc::SIGKILL);
        let status = job.wait().unwrap();
        assert!(!status.success(), "a rank killed mid-walk fails the job");
        let doc = ResultsFile::load(&env.output).expect("the results survive");
        assert!(!doc.points[0].runs.is_empty(), "finished runs are on disk");
        for run in &doc.points[0].runs {
            assert_eq!(
                run.ops,
                doc.settings.untar.as_ref().unwrap().entries,
                "a finished walk counted every entry once"
            );
        }
        wait_until("the scratch removed", || env.leftovers().is_empty());
        wait_until("no warden left", || processes_running("fsscale scratch-warden").is_empty());
    }

    #[test]
    fn ranks_with_another_plan_are_refused_before_anything_runs() {
        if !has_mpirun("ranks_with_another_plan_are_refused_before_anything_runs") {
            return;
        }
        let _job = one_job_at_a_time();
        let env = TestEnv::new();
        // MPMD: rank 1 is given another lookup shape, as a rank built from
        // another version of fsscale would have run one.
        let mut cmd = Command::new("mpirun");
        cmd.args(["--allow-run-as-root", "--oversubscribe"]);
        for files in ["1", "5"] {
            if files == "5" {
                cmd.arg(":");
            }
            cmd.args(["-np", "1", env!("CARGO_BIN_EXE_fsscale"), "run", "stat", "-j", "2", "-n", "1"]);
            cmd.args(["--duration", "0.05", "--files", files, "--dir"]).arg(&env.dir).arg("-o").arg(&env.output);
        }
        cmd.env("FSSCALE_CACHE_DIR", std::env::temp_dir().join("fsscale-test-cache"));
        let out = cmd.stdin(std::process::Stdio::null()).output().unwrap();
        assert!(!out.status.success());
        let err = stderr(&out);
        assert!(err.contains("rank 1 on ") && err.contains("would run another plan than rank 0"), "{err}");
        assert!(err.contains("every rank must run the same fsscale with the same options"), "{err}");
        let ran = ResultsFile::load(&env.output).map(|d| d.points.iter().map(|p| p.runs.len()).sum::<usize>());
        assert_eq!(ran.unwrap_or(0), 0, "nothing ran");
        assert!(env.leftovers().is_empty());
    }

    #[test]
    fn a_stopped_rank_fails_the_job_within_the_stall_timeout_naming_it() {
        if !has_mpirun("a_stopped_rank_fails_the_job_within_the_stall_timeout_naming_it") {
            return;
        }
        let _job = one_job_at_a_time();
        let env = TestEnv::new();
        let args = ["stat", "-j", "2", "-n", "50", "--duration", "0.3", "--stall-timeout", "2"];
        let mut job = mpirun(&env, 2, None, &args);
        let mut job = job.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped()).spawn().unwrap();
        wait_until("a finished run", || {
            ResultsFile::load(&env.output).is_ok_and(|d| d.points.iter().any(|p| !p.runs.is_empty()))
        });
        let rank1 = rank_pid(1).expect("rank 1 runs");
        let _ = fsscale::sys::send_signal(rank1, libc::SIGSTOP);
        let started = std::time::Instant::now();
        let mut ended = None;
        while started.elapsed() < std::time::Duration::from_secs(30) {
            if let Some(status) = job.try_wait().unwrap() {
                ended = Some(status);
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let _ = fsscale::sys::send_signal(rank1, libc::SIGKILL);
        if ended.is_none() {
            let _ = job.kill();
        }
        let status = job.wait().unwrap();
        assert!(ended.is_some(), "the job hung with a stopped rank for 30 s");
        assert!(!status.success());
        let mut err = String::new();
        std::io::Read::read_to_string(&mut job.stderr.take().unwrap(), &mut err).unwrap();
        assert!(err.contains("rank 1 on ") && err.contains("was not heard of for"), "{err}");
        let doc = ResultsFile::load(&env.output).expect("the results survive");
        assert_eq!(doc.status, fsscale::results::Status::Failed);
        assert!(doc.error.as_deref().is_some_and(|e| e.contains("rank 1 on ")), "{:?}", doc.error);
        assert!(doc.points.iter().any(|p| !p.runs.is_empty()), "finished runs are on disk");
        wait_until("the scratch removed", || env.leftovers().is_empty());
    }
}
