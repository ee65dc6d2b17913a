//! RAID geometry shared by the simulator and the real engine.
//!
//! * [`Geometry`] maps volume extents to member extents for raid0, raid1
//!   (n-way), raid10 (md near-2), raid5 and raid6 (md's four layouts) and
//!   concat, and back.
//! * [`Geometry::write_plan`] decides per stripe between full-stripe,
//!   read-modify-write and reconstruct-write, as md does.
//! * [`gf`] holds GF(2^8) arithmetic (polynomial 0x11d, generator 2) and the
//!   P+Q syndromes with one- and two-member recovery.
//!
//! Nothing here does I/O or keeps time.

#![warn(missing_docs)]

mod geometry;
pub mod gf;

pub use geometry::{ArrayLayout, Extent, Geometry, LayoutError, Level, Piece, StripeOp, WriteKind};
