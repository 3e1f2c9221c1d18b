//! One long-lived thread for work handed off by a caller that goes on with
//! its own: the exclude side of a long compile, while the calling thread
//! reads and compiles the include side.
//!
//! Why not a thread per job: starting one cost about a tenth of a
//! millisecond on the machines measured, and waiting for it to end another,
//! out of a compile of two or three. The thread is started on first use and
//! then waits for jobs, idle. A job that finds it busy (another caller's
//! job), or in a child process that `fork` left without it, gets a thread of
//! its own; if no thread can be started at all, the job runs on the caller's.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};

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

/// Runs `job` on the helper thread, or failing that on a thread of its own,
/// or failing that right here. Returns at once unless it ran here. A panic
/// in `job` is caught (its result channel, dropped, tells the caller).
pub fn run(job: impl FnOnce() + Send + 'static) {
    let job: Job = Box::new(job);
    let job = match submit(job) {
        Ok(()) => return,
        Err(job) => job,
    };
    // The helper is busy, gone or not to be had: a thread for this job,
    // which stays in `slot` should the thread not start.
    let slot = Arc::new(Mutex::new(Some(job)));
    let theirs = Arc::clone(&slot);
    let spawned = std::thread::Builder::new().name("toolfilter-job".into()).spawn(move || {
        if let Some(job) = theirs.lock().ok().and_then(|mut j| j.take()) {
            let _ = catch_unwind(AssertUnwindSafe(job));
        }
    });
    if spawned.is_err() {
        // No thread at all: the job is still in the slot; run it here.
        if let Some(job) = slot.lock().ok().and_then(|mut j| j.take()) {
            let _ = catch_unwind(AssertUnwindSafe(job));
        }
    }
}

/// Hands `job` to the helper (starting it if need be); gives it back when
/// the helper is busy or cannot take it.
fn submit(job: Job) -> Result<(), Job> {
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

    #[test]
    fn jobs_run_and_report_back() {
        for n in 0..50u32 {
            let (send, receive) = sync_channel(1);
            run(move || send.send(n * 2).expect("the caller waits"));
            assert_eq!(receive.recv(), Ok(n * 2));
        }
    }

    #[test]
    fn callers_at_once_all_get_their_answers() {
        let handles: Vec<_> = (0..8u64)
            .map(|t| {
                std::thread::spawn(move || {
                    (0..20u64)
                        .map(|n| {
                            let (send, receive) = sync_channel(1);
                            run(move || {
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
    }

    #[test]
    fn a_panicking_job_drops_its_channel_and_the_helper_goes_on() {
        let (send, receive) = sync_channel::<u32>(1);
        run(move || {
            let _keep = send;
            panic!("a job that fails");
        });
        assert!(receive.recv().is_err());
        let (send, receive) = sync_channel(1);
        run(move || send.send(7).expect("the caller waits"));
        assert_eq!(receive.recv(), Ok(7));
    }
}
