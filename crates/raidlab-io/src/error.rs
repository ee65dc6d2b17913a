//! The real engine's errors: what kind of thing went wrong, a message
//! naming what and where, and the operating system's error beneath it.

/// What kind of thing went wrong in a real run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The expression cannot be run for real: its syntax, an impossible
    /// array, or a construct only the simulator has.
    Expression,
    /// A member the safety rules refuse (a signature, a mount, a holder,
    /// neither a file nor a block device).
    Refused,
    /// The workload does not fit: a span or block beyond the volume, or a
    /// member that cannot be created at a size or would be too small.
    Size,
    /// The I/O engine asked for is not available here.
    Engine,

    /// An operation on a member failed (create, open, read, write).
    Io,
}

/// An error of a real run: its kind, a message naming what and where,
/// and the operating system's error beneath it, when there is one.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{msg}")]
pub struct Error {
    kind: ErrorKind,
    msg: String,
    /// The I/O error the message reports (kept for callers that act on
    /// it: its `kind()`, its errno).
    #[source]
    source: Option<std::sync::Arc<std::io::Error>>,
}

impl PartialEq for Error {
    /// Errors are equal when they say the same thing: the source's text is
    /// already in the message.
    fn eq(&self, o: &Error) -> bool {
        self.kind == o.kind && self.msg == o.msg
    }
}

impl Eq for Error {}

impl Error {
    /// An error of `kind`.
    pub fn new(kind: ErrorKind, msg: impl Into<String>) -> Self {
        Error {
            kind,
            msg: msg.into(),
            source: None,
        }
    }

    /// An I/O error `e` while doing `what` ("writing metadata"): the
    /// message says both, and `e` stays the error's source.
    pub fn io(what: impl std::fmt::Display, e: std::io::Error) -> Self {
        Error {
            kind: ErrorKind::Io,
            msg: format!("{what}: {e}"),
            source: Some(std::sync::Arc::new(e)),
        }
    }

    /// An I/O error as it is, its text the message.
    pub(crate) fn from_io(e: std::io::Error) -> Self {
        Error {
            kind: ErrorKind::Io,
            msg: e.to_string(),
            source: Some(std::sync::Arc::new(e)),
        }
    }

    /// The operating system's error beneath this one, if any.
    pub fn io_source(&self) -> Option<&std::io::Error> {
        self.source.as_deref()
    }

    /// What kind of error this is.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// Whether the input was at fault (expression, member, workload) rather
    /// than the run itself.
    pub fn is_input(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::Expression | ErrorKind::Refused | ErrorKind::Size
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_io_error_keeps_its_source() {
        let e = Error::io(
            "writing metadata",
            std::io::Error::from_raw_os_error(libc::ENOSPC),
        );
        assert!(e.to_string().starts_with("writing metadata: "));
        assert_eq!(
            e.io_source().and_then(|s| s.raw_os_error()),
            Some(libc::ENOSPC)
        );
        assert!(std::error::Error::source(&e).is_some());
        assert!(!e.is_input());
        let plain = Error::new(ErrorKind::Size, "too small");
        assert!(plain.io_source().is_none());
    }
}
