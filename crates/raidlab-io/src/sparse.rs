//! The data of a served simulated array: a sparse file of the volume's
//! size, on disk (`--backing FILE`) or in memory (an anonymous memory
//! file), so that what a client writes reads back. Only written blocks
//! take space; in memory, the space they may take is bounded.

use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;

/// A volume's bytes in a sparse file.
pub struct Sparse {
    file: File,
    size: u64,
    /// Most bytes the file may hold allocated (in memory); a write once
    /// it holds more fails with ENOSPC.
    limit: Option<u64>,
}

impl Sparse {
    /// A volume of `size` bytes in memory, holding at most `limit` bytes
    /// of written data (a write that finds the limit passed fails; the
    /// one that passes it may go over by its own length).
    pub fn in_memory(size: u64, limit: u64) -> io::Result<Sparse> {
        let name = c"raidlab-serve";
        // SAFETY: `name` is a NUL-terminated string that lives across the
        // call; memfd_create reads it and returns a new descriptor (or -1,
        // checked below) that nothing else owns.
        let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned by memfd_create, is open, and is
        // owned by nothing else: the File takes sole ownership of it.
        let file = unsafe { <File as std::os::fd::FromRawFd>::from_raw_fd(fd) };
        file.set_len(size)?;
        Ok(Sparse {
            file,
            size,
            limit: Some(limit),
        })
    }

    /// A volume of `size` bytes in the file at `path`: created (sparse)
    /// when absent; an existing file must be a regular file of exactly
    /// `size` bytes (an earlier serve's image of the same volume), else it
    /// is refused and left as it is.
    pub fn on_disk(path: &Path, size: u64) -> Result<Sparse, String> {
        let shown = path.display();
        match std::fs::symlink_metadata(path) {
            Ok(m) if !m.file_type().is_file() => {
                return Err(format!("--backing {shown} is not a regular file"))
            }
            Ok(m) if m.len() != size => {
                return Err(format!(
                    "--backing {shown} holds {} bytes; the simulated volume has {size} (give a new path, or an image of this volume)",
                    m.len()
                ))
            }
            _ => {}
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| format!("--backing {shown}: {e}"))?;
        if file.metadata().map_err(|e| e.to_string())?.len() != size {
            file.set_len(size)
                .map_err(|e| format!("--backing {shown}: {e}"))?;
        }
        Ok(Sparse {
            file,
            size,
            limit: None,
        })
    }

    /// The volume's size, bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Bytes the file holds allocated.
    pub fn allocated(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.blocks() * 512)
    }

    /// Read `buf.len()` bytes at `off` (never-written bytes read as zero).
    pub fn read(&self, off: u64, buf: &mut [u8]) -> io::Result<()> {
        self.file.read_exact_at(buf, off)
    }

    /// Write `data` at `off`.
    pub fn write(&self, off: u64, data: &[u8]) -> io::Result<()> {
        if let Some(limit) = self.limit {
            if self.allocated()? > limit {
                return Err(io::Error::from_raw_os_error(libc::ENOSPC));
            }
        }
        self.file.write_all_at(data, off)
    }

    /// Make every write so far durable.
    pub fn sync(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    /// `len` bytes at `off` read as zero from now on, their space freed
    /// where the file system can punch holes (else zeroes are written).
    pub fn zero(&self, off: u64, len: u64) -> io::Result<()> {
        let (o, l) = (off as libc::off_t, len as libc::off_t);
        // SAFETY: fallocate takes a descriptor the File owns and keeps
        // open for the call, and plain integers; it touches no memory of
        // ours.
        let rc = unsafe {
            libc::fallocate(
                std::os::fd::AsRawFd::as_raw_fd(&self.file),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                o,
                l,
            )
        };
        if rc == 0 {
            return Ok(());
        }
        let zeros = vec![0u8; (1 << 20).min(len) as usize];
        let mut at = 0;
        while at < len {
            let n = (len - at).min(zeros.len() as u64) as usize;
            self.file.write_all_at(&zeros[..n], off + at)?;
            at += n as u64;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_read_back_holes_read_zero_and_memory_is_bounded() {
        let s = Sparse::in_memory(64 << 20, 1 << 20).unwrap();
        let mut b = vec![1u8; 4096];
        s.read(8192, &mut b).unwrap();
        assert!(b.iter().all(|&x| x == 0));
        s.write(8192, &[7u8; 4096]).unwrap();
        s.read(8192, &mut b).unwrap();
        assert!(b.iter().all(|&x| x == 7));
        s.zero(8192, 4096).unwrap();
        s.read(8192, &mut b).unwrap();
        assert!(b.iter().all(|&x| x == 0));
        // Past the bound writes fail.
        let big = vec![3u8; 1 << 20];
        let mut failed = false;
        for i in 0..4 {
            failed |= s.write(i << 20, &big).is_err();
        }
        assert!(failed, "{} bytes allocated", s.allocated().unwrap());
    }

    #[test]
    fn a_backing_file_of_another_size_is_refused_and_kept() {
        let dir = std::env::temp_dir().join(format!("raidlab-sparse-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("img");
        std::fs::write(&p, b"precious").unwrap();
        let e = Sparse::on_disk(&p, 1 << 20).err().unwrap();
        assert!(e.contains("holds 8 bytes"), "{e}");
        assert_eq!(std::fs::read(&p).unwrap(), b"precious");
        let q = dir.join("new");
        let s = Sparse::on_disk(&q, 1 << 20).unwrap();
        s.write(0, b"abc").unwrap();
        drop(s);
        assert_eq!(std::fs::metadata(&q).unwrap().len(), 1 << 20);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
