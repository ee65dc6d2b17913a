//! How a command fails: the exit status and the one line the user sees.

use std::fmt;
use std::process::ExitCode;

/// What kind of failure ended a command; it decides the exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Bad input (expression, workload, file, option): exit status 2.
    Input,
    /// The command was well formed but failed while running: exit status 1.
    Runtime,
}

/// A failed command: its kind and a message (one line once printed).
#[derive(Debug)]
pub struct Failure {
    kind: Kind,
    msg: String,
}

impl Failure {
    /// Bad input.
    pub fn input(msg: impl Into<String>) -> Self {
        Failure {
            kind: Kind::Input,
            msg: msg.into(),
        }
    }

    /// A runtime failure.
    pub fn runtime(msg: impl Into<String>) -> Self {
        Failure {
            kind: Kind::Runtime,
            msg: msg.into(),
        }
    }

    /// The same failure with `prefix: ` before its message.
    pub fn context(self, prefix: impl fmt::Display) -> Self {
        Failure {
            kind: self.kind,
            msg: format!("{prefix}: {}", self.msg),
        }
    }

    /// Print the one-line message on stderr and give the exit status.
    pub fn report(&self) -> ExitCode {
        eprintln!("raidlab: error: {}", self.msg.replace('\n', " "));
        match self.kind {
            Kind::Input => ExitCode::from(2),
            Kind::Runtime => ExitCode::from(1),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

impl From<raidlab_core::Error> for Failure {
    fn from(e: raidlab_core::Error) -> Self {
        Failure::input(e.to_string())
    }
}

impl From<raidlab_sim::SimError> for Failure {
    /// Every simulator error is about the configuration it was given.
    fn from(e: raidlab_sim::SimError) -> Self {
        Failure::input(e.to_string())
    }
}

impl From<raidlab_io::Error> for Failure {
    fn from(e: raidlab_io::Error) -> Self {
        if e.is_input() {
            Failure::input(e.to_string())
        } else {
            Failure::runtime(e.to_string())
        }
    }
}

impl From<raidlab_report::sweep::SweepError> for Failure {
    fn from(e: raidlab_report::sweep::SweepError) -> Self {
        Failure::input(e.0)
    }
}

impl From<raidlab_report::plot::PlotError> for Failure {
    fn from(e: raidlab_report::plot::PlotError) -> Self {
        use raidlab_report::plot::PlotError;
        match e {
            PlotError::Input(m) => Failure::input(m),
            PlotError::Output(m) => Failure::runtime(m),
        }
    }
}
