//! fio's `include FILE` directive in job files: a section pulls in the
//! option lines of another file, as if they were written where the
//! directive is (fio's `__parse_jobs_ini`, HOWTO "Job file format").
//!
//! Core reads no file here: the caller hands in a reader, so the rules
//! (where a directive may stand, what an included file may hold, how deep
//! and how large it may grow) are checked on text alone.

use super::jobfile::MAX_TEXT;
use super::werr;
use crate::error::{Error, Result};

/// Deepest chain of files including one another. fio sets none (a file
/// that includes itself recurses until fio's stack runs out); real job
/// files nest one or two deep.
pub const MAX_INCLUDE_DEPTH: usize = 16;

/// Most files one job file may include, counting every directive
/// followed (a file included twice counts twice): with the depth bound
/// alone, files that each include the next several times, all empty,
/// would ask for billions of reads and add no text to stop them.
pub const MAX_INCLUDES: usize = 1000;

/// What finds an included file: given the including file's path and the
/// name the directive gives, the included file's path and text.
pub type IncludeReader<'a> = dyn Fn(&str, &str) -> Result<(String, String)> + 'a;

/// Where a line of an expanded job file came from: the file (the top one
/// as the user named it, an included one as its reader found it) and its
/// line there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The file's name.
    pub file: String,
    /// Its line, from 1.
    pub line: usize,
}

/// A job file's text with every `include` directive replaced by the
/// option lines of the file it names, and where each line of the result
/// came from. `read(from, name)` returns the path and text of the file
/// `name` that the file `from` includes (resolving `name` as fio does: as
/// given, else beside `from`); a file it includes in turn is resolved from
/// that path.
///
/// As in fio, a directive (`include FILE`, or `include=FILE`) stands
/// inside a section, and an included file holds option lines only, with
/// directives of its own; refused, each with a line naming the file and
/// line: a directive before any section, one without a name, a section in
/// an included file, a chain deeper than [`MAX_INCLUDE_DEPTH`], more than
/// [`MAX_INCLUDES`] inclusions, and text that grows past 4 MiB.
pub fn expand_includes(
    text: &str,
    name: &str,
    read: &IncludeReader<'_>,
) -> Result<(String, Vec<Origin>)> {
    let mut x = Expansion {
        read,
        text: String::with_capacity(text.len()),
        origins: Vec::new(),
        includes: 0,
    };
    x.file(text, name, 0)?;
    Ok((x.text, x.origins))
}

/// The expansion under way.
struct Expansion<'r> {
    read: &'r IncludeReader<'r>,
    text: String,
    origins: Vec<Origin>,
    /// Directives followed so far.
    includes: usize,
}

impl Expansion<'_> {
    /// Add `text`, the file `name` at include depth `depth` (0: the job
    /// file itself).
    fn file(&mut self, text: &str, name: &str, depth: usize) -> Result<()> {
        let mut in_section = depth > 0;
        for (i, raw) in text.lines().enumerate() {
            let at = || format!("{name} line {}", i + 1);
            // A line ends at its first `;` or `#`, as for options.
            let line = raw.split([';', '#']).next().unwrap_or_default().trim();
            if line.starts_with('[') {
                if depth > 0 {
                    return werr(format!(
                        "{}: an included file holds options only, not sections ({line})",
                        at()
                    ));
                }
                in_section = true;
            } else if let Some(target) = directive(line) {
                self.include(target, name, depth, in_section, &at())?;
                continue;
            }
            self.text.push_str(raw);
            self.text.push('\n');
            self.origins.push(Origin {
                file: name.to_string(),
                line: i + 1,
            });
            if self.text.len() > MAX_TEXT {
                return werr(format!(
                    "{}: the job file passes {} MiB with what it includes",
                    at(),
                    MAX_TEXT >> 20
                ));
            }
        }
        Ok(())
    }

    /// Add the file `target` that `from` (at include depth `depth`)
    /// includes at `at`.
    fn include(
        &mut self,
        target: &str,
        from: &str,
        depth: usize,
        in_section: bool,
        at: &str,
    ) -> Result<()> {
        if !in_section {
            return werr(format!(
                "{at}: include outside a section (fio takes included options into the section the directive stands in)"
            ));
        }
        if target.is_empty() {
            return werr(format!("{at}: include needs a file name"));
        }
        if depth + 1 > MAX_INCLUDE_DEPTH {
            return werr(format!(
                "{at}: include {target}: files include one another more than {MAX_INCLUDE_DEPTH} deep"
            ));
        }
        self.includes += 1;
        if self.includes > MAX_INCLUDES {
            return werr(format!(
                "{at}: include {target}: more than {MAX_INCLUDES} files included in all"
            ));
        }
        let (path, text) = (self.read)(from, target)?;
        self.file(&text, &path, depth + 1)
    }
}

/// A job-file error about a line of an expanded text
/// ([`Error::JobLine`]), told as the file and line that line came from when
/// the job file included others (`origins` from [`expand_includes`]); any
/// other error as it is.
pub fn locate_error(e: Error, origins: &[Origin]) -> Error {
    let Error::JobLine { line, msg } = &e else {
        return e;
    };
    let included = origins.iter().any(|o| o.file != origins[0].file);
    match origins.get(line.wrapping_sub(1)).filter(|_| included) {
        Some(o) => Error::Workload(format!("{} line {}: {msg}", o.file, o.line)),
        None => e,
    }
}

/// The file an `include` directive names (empty when it names none), or
/// `None` when the line is not a directive.
fn directive(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("include")?;
    match rest.chars().next() {
        None => Some(""),
        Some(c) if c.is_whitespace() || c == '=' => Some(rest[1..].trim()),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use std::collections::BTreeMap;

    /// A reader over named texts.
    fn files(list: &[(&str, &str)]) -> impl Fn(&str, &str) -> Result<(String, String)> {
        let map: BTreeMap<String, String> = list
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |_from: &str, name: &str| {
            map.get(name)
                .map(|t| (name.to_string(), t.clone()))
                .ok_or_else(|| Error::Workload(format!("cannot read '{name}'")))
        }
    }

    fn err(text: &str, list: &[(&str, &str)]) -> String {
        expand_includes(text, "job.fio", &files(list))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn included_options_stand_where_the_directive_does() {
        let main = "[global]\nbs=8k\ninclude common.fio\n\n[a]\nrw=randread\ninclude=deep.fio\n";
        let read = files(&[
            ("common.fio", "runtime=2 ; two seconds\nnumjobs=2\n"),
            ("deep.fio", "include common.fio\niodepth=4\n"),
        ]);
        let (text, origins) = expand_includes(main, "job.fio", &read).unwrap();
        assert_eq!(
            text,
            "[global]\nbs=8k\nruntime=2 ; two seconds\nnumjobs=2\n\n[a]\nrw=randread\nruntime=2 ; two seconds\nnumjobs=2\niodepth=4\n"
        );
        assert_eq!(origins.len(), text.lines().count());
        let o = |f: &str, line| Origin {
            file: f.into(),
            line,
        };
        assert_eq!(origins[2], o("common.fio", 1));
        assert_eq!(origins[4], o("job.fio", 4));
        assert_eq!(origins[9], o("deep.fio", 2));
    }

    #[test]
    fn errors_about_expanded_lines_name_the_file_and_line_they_came_from() {
        let read = files(&[("inc.fio", "bs=4k\nbogus=1\n")]);
        let (_, origins) =
            expand_includes("[a]\ninclude inc.fio\nrw=read\n", "job.fio", &read).unwrap();
        let at = |n: usize| {
            locate_error(
                Error::JobLine {
                    line: n,
                    msg: "unsupported".into(),
                },
                &origins,
            )
            .to_string()
        };
        assert!(at(3).contains("inc.fio line 2: unsupported"), "{}", at(3));
        assert!(at(4).contains("job.fio line 3: unsupported"), "{}", at(4));
        assert!(at(9).contains("job file line 9"), "past the end: as it was");
        // Line 0 is no line: as it was.
        assert!(at(0).contains("job file line 0"), "{}", at(0));
        // Errors of no line pass through.
        let e = locate_error(Error::Workload("bs=x".into()), &origins);
        assert_eq!(e, Error::Workload("bs=x".into()));
        // Without includes the lines are the file's own: unchanged.
        let (_, plain) = expand_includes("[a]\nrw=read\n", "job.fio", &read).unwrap();
        let e = locate_error(
            Error::JobLine {
                line: 2,
                msg: "x".into(),
            },
            &plain,
        );
        assert!(e.to_string().contains("job file line 2: x"), "{e}");
    }

    #[test]
    fn a_file_without_directives_is_unchanged() {
        let main = "[a]\nrw=read ; include nothing\n# include x.fio\nincludes=1\n";
        let (text, origins) = expand_includes(main, "job.fio", &files(&[])).unwrap();
        assert_eq!(text, main);
        assert_eq!(origins.last().unwrap().line, 4);
    }

    #[test]
    fn misplaced_empty_and_sectioned_includes_are_refused_with_their_line() {
        let e = err("include a.fio\n[a]\n", &[("a.fio", "bs=4k\n")]);
        assert!(
            e.contains("job.fio line 1: include outside a section"),
            "{e}"
        );
        let e = err("[a]\ninclude\n", &[]);
        assert!(
            e.contains("job.fio line 2: include needs a file name"),
            "{e}"
        );
        let e = err("[a]\ninclude a.fio\n", &[("a.fio", "bs=4k\n[b]\n")]);
        assert!(
            e.contains("a.fio line 2: an included file holds options only"),
            "{e}"
        );
        let e = err("[a]\ninclude missing.fio\n", &[]);
        assert!(e.contains("cannot read 'missing.fio'"), "{e}");
    }

    #[test]
    fn a_file_that_includes_itself_is_refused_not_followed_forever() {
        let e = err(
            "[a]\ninclude self.fio\n",
            &[("self.fio", "include self.fio\n")],
        );
        assert!(e.contains("more than 16 deep"), "{e}");
    }

    #[test]
    fn empty_files_included_many_times_over_are_refused_not_read_forever() {
        let mut list = vec![("f16".to_string(), String::new())];
        for d in (0..16).rev() {
            list.push((format!("f{d}"), format!("include f{}\n", d + 1).repeat(5)));
        }
        let refs: Vec<(&str, &str)> = list.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        let e = err("[a]\ninclude f1\n", &refs);
        assert!(e.contains("more than 1000 files included"), "{e}");
    }

    #[test]
    fn includes_cannot_grow_the_text_past_its_bound() {
        // A 1 MiB file (the most the command line reads) included five times.
        let big = format!("description={}\n", "x".repeat(1 << 20));
        let e = err(
            &format!("[a]\n{}", "include big\n".repeat(5)),
            &[("big", &big)],
        );
        assert!(e.contains("passes 4 MiB"), "{e}");
    }
}
