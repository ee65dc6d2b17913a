//! One I/O request as an application issues it: what the workload
//! generator, trace replay, rate pacing and both engines pass around. A
//! module of its own so that pacing and workloads both use it without
//! depending on each other.

/// One I/O as the application issues it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Io {
    /// Byte offset in the volume.
    pub offset: u64,
    /// Length in bytes.
    pub len: u32,
    /// Read (true) or write.
    pub read: bool,
}
