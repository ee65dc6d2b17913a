//! How a real run is asked to run: its back end, direct I/O, verify, the
//! safety rules and the verify state.

use crate::backend::EngineKind;
use crate::safety;

/// How to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Back end; `None`: io_uring where the kernel has it, else psync.
    pub engine: Option<EngineKind>,
    /// Open members with O_DIRECT where the file system allows it.
    pub direct: bool,
    /// Write self-describing blocks and check every read.
    pub verify: bool,
    /// Write to devices that are in use or carry signatures.
    pub force: bool,
    /// Record each job's I/Os in issue order.
    pub trace: bool,
    /// Create new arrays over the members whatever metadata they carry
    /// (`mdadm --create`); without it, members that carry metadata are
    /// assembled and checked.
    pub create: bool,
    /// With `verify`: a file holding the generation of every block written
    /// under verify (fio's verify state). Loaded when it exists, so blocks
    /// older than recorded are stale; saved after a run that writes.
    pub verify_state: Option<std::path::PathBuf>,
}

impl RunOptions {
    /// The safety rules this run keeps (`force` lifts them).
    pub fn guard(&self) -> safety::Guard {
        safety::Guard::from_force(self.force)
    }
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            engine: None,
            direct: true,
            verify: false,
            force: false,
            trace: false,
            create: false,
            verify_state: None,
        }
    }
}
