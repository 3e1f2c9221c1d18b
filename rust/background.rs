//! One long-lived thread for work handed off by a caller that goes on with
//! its own: the exclude side of a long compile, while the calling thread
//! reads and compiles the include side.
//!
//! Why not a thread per job: starting one cost about a tenth of a
//! millisecond on the machines measured, and waiting for it to end another,
//! out of a compile of two or three. The thread is started on first use and
//! then waits for jobs, idle. There is only ever one (per process: a child of
//! `fork` starts its own): a job that finds it busy (another caller's job, or
//! an abandoned one finishing) is given back, for the caller to do itself.
//! A thread per busy moment let a loop of failing compiles pile up threads
//! and the memory of their unfinished work.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::Mutex;

type Job = Box<dyn FnOnce() + Send + 'static>;

struct Helper {
    jobs: Sender<Job>,
    /// The process that started the thread: a child of `fork` has no such
    /// thread, only this record of it.
    pid: u32,
}

static HELPER: Mutex<Option<Helper>> = Mutex::new(None);
/// Set while the helper has a job: a second caller does not queue behind it.
static BUSY: AtomicBool = AtomicBool::new(false);

/// Hands `job` to the helper thread (starting it if need be) and returns at
/// once; gives the job back when the helper is busy or cannot be had. A
/// panic in `job` is caught (its result channel, dropped, tells the caller).
#[allow(clippy::result_large_err)]
pub fn try_run(job: impl FnOnce() + Send + 'static) -> Result<(), Box<dyn FnOnce() + Send + 'static>> {
    let job: Job = Box::new(job);
    // A lock held across a `fork` stays held in the child: never wait for it.
    let Ok(mut helper) = HELPER.try_lock() else {
        return Err(job);
    };
    let pid = std::process::id();
    if helper.as_ref().is_some_and(|h| h.pid != pid) {
        // Forked: the thread and whatever it was doing stayed in the parent.
        *helper = None;
        BUSY.store(false, Ordering::SeqCst);
    }
    if BUSY.swap(true, Ordering::SeqCst) {
        return Err(job);
    }
    if helper.is_none() {
        *helper = start(pid);
    }
    let sent = match helper.as_ref() {
        Some(h) => h.jobs.send(job).map_err(|unsent| unsent.0),
        None => Err(job),
    };
    if sent.is_err() {
        // The thread is gone (or never started): forget it, free the flag.
        *helper = None;
        BUSY.store(false, Ordering::SeqCst);
    }
    sent
}

fn start(pid: u32) -> Option<Helper> {
    let (jobs, queue) = channel::<Job>();
    let started = std::thread::Builder::new().name("toolfilter-helper".into()).spawn(move || {
        for job in queue {
            let _ = catch_unwind(AssertUnwindSafe(job));
            BUSY.store(false, Ordering::SeqCst);
        }
    });
    started.ok().map(|_| Helper { jobs, pid })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::sync_channel;

    /// Runs `job` on the helper, or here when it is given back (a panic
    /// caught, as the helper catches it).
    fn run_somewhere(job: impl FnOnce() + Send + 'static) -> bool {
        match try_run(job) {
            Ok(()) => true,
            Err(job) => {
                let _ = catch_unwind(AssertUnwindSafe(job));
                false
            }
        }
    }

    #[test]
    fn jobs_run_and_report_back() {
        for n in 0..50u32 {
            let (send, receive) = sync_channel(1);
            run_somewhere(move || send.send(n * 2).expect("the caller waits"));
            assert_eq!(receive.recv(), Ok(n * 2));
        }
    }

    #[test]
    fn callers_at_once_all_get_their_answers_and_no_thread_is_added() {
        let threads_before = threads_named("toolfilter-job");
        let handles: Vec<_> = (0..8u64)
            .map(|t| {
                std::thread::spawn(move || {
                    (0..20u64)
                        .map(|n| {
                            let (send, receive) = sync_channel(1);
                            run_somewhere(move || {
                                std::thread::sleep(std::time::Duration::from_micros(200));
                                send.send(t * 100 + n).expect("the caller waits");
                            });
                            receive.recv().expect("answered")
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for (t, handle) in handles.into_iter().enumerate() {
            let want: Vec<u64> = (0..20).map(|n| t as u64 * 100 + n).collect();
            assert_eq!(handle.join().expect("no panic"), want);
        }
        assert!(threads_named("toolfilter-helper") <= 1);
        assert_eq!(threads_named("toolfilter-job"), threads_before);
    }

    #[test]
    fn a_busy_helper_gives_the_job_back() {
        let (hold, held) = sync_channel::<()>(0);
        let (started, start) = sync_channel::<()>(1);
        // Keep the helper busy (or, if another test holds it, any job is
        // given back anyway): a second job must come back, not wait.
        let handed = try_run(move || {
            started.send(()).expect("the test waits");
            let _ = held.recv();
        })
        .is_ok();
        if handed {
            start.recv().expect("the first job started");
        }
        let (send, receive) = sync_channel(1);
        let given_back = try_run(move || send.send(1).expect("the caller waits"));
        match given_back {
            Err(job) => {
                job();
                assert_eq!(receive.recv(), Ok(1));
            }
            Ok(()) => assert!(!handed, "a busy helper took a second job"),
        }
        drop(hold);
    }

    #[test]
    fn a_panicking_job_drops_its_channel_and_the_helper_goes_on() {
        let (send, receive) = sync_channel::<u32>(1);
        run_somewhere(move || {
            let _keep = send;
            panic!("a job that fails");
        });
        assert!(receive.recv().is_err());
        let (send, receive) = sync_channel(1);
        run_somewhere(move || send.send(7).expect("the caller waits"));
        assert_eq!(receive.recv(), Ok(7));
    }

    /// How many threads of this process carry `name` (Linux; 0 elsewhere).
    fn threads_named(name: &str) -> usize {
        let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return 0 };
        tasks
            .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
            .filter(|comm| comm.trim() == name)
            .count()
    }
}
