//! The expression language's parser: text to an [`Ast`] with columns,
//! bounded in size and depth.

use super::*;

/// One `key=value` option with the column of its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opt {
    /// Key.
    pub key: String,
    /// Value as written.
    pub value: String,
    /// 1-based column of the key.
    pub col: usize,
}

/// Syntax tree of an expression, before presets are consulted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ast {
    /// `[COUNT*]NAME[opts]`
    Leaf {
        /// Preset name or path.
        name: String,
        /// Repeat count (1 when absent).
        count: u32,
        /// Options.
        opts: Vec<Opt>,
        /// 1-based column of the leaf.
        col: usize,
    },
    /// `NAME[opts](children)`: a controller, an array or the host.
    Group {
        /// Controller preset, RAID level or `host`.
        name: String,
        /// Options.
        opts: Vec<Opt>,
        /// Children, in order.
        children: Vec<Ast>,
        /// 1-based column of the name.
        col: usize,
    },
}

pub(crate) struct Parser<'a> {
    pub(crate) s: &'a [u8],
    pub(crate) pos: usize,
    pub(crate) depth: usize,
    /// (byte position, characters before it) of the last column computed.
    pub(crate) col_cache: std::cell::Cell<(usize, usize)>,
}

pub(crate) fn name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.' | b'/' | b'~' | b'+' | b':')
}

impl<'a> Parser<'a> {
    pub(crate) fn err<T>(&self, msg: impl Into<String>) -> Result<T> {
        Err(Error::Syntax {
            col: self.col(self.pos),
            msg: msg.into(),
        })
    }
    /// 1-based column of byte `pos`. Columns count characters (bytes that
    /// do not continue a UTF-8 sequence), not bytes; the count carries on
    /// from the last column asked for, so a parse stays linear in the text.
    pub(crate) fn col(&self, pos: usize) -> usize {
        let pos = pos.min(self.s.len());
        let (mut at, mut chars) = self.col_cache.get();
        if pos < at {
            (at, chars) = (0, 0);
        }
        chars += self.s[at..pos]
            .iter()
            .filter(|&&b| b & 0xC0 != 0x80)
            .count();
        self.col_cache.set((pos, chars));
        chars + 1
    }
    pub(crate) fn skip_ws(&mut self) {
        while self.pos < self.s.len() {
            let c = self.s[self.pos];
            if c.is_ascii_whitespace() {
                self.pos += 1;
            } else if c == b'#' {
                while self.pos < self.s.len() && self.s[self.pos] != b'\n' {
                    self.pos += 1;
                }
            } else {
                break;
            }
        }
    }
    pub(crate) fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.pos).copied()
    }
    pub(crate) fn describe(&self) -> String {
        match self.s.get(self.pos) {
            None => "end of expression".into(),
            Some(_) => {
                let rest = String::from_utf8_lossy(&self.s[self.pos..]);
                format!("'{}'", rest.chars().next().unwrap_or('?'))
            }
        }
    }
    pub(crate) fn word(&mut self) -> Result<(String, usize)> {
        self.skip_ws();
        let start = self.pos;
        while self.pos < self.s.len() && name_char(self.s[self.pos]) {
            self.pos += 1;
        }
        if start == self.pos {
            return self.err(format!("expected a name, found {}", self.describe()));
        }
        Ok((
            String::from_utf8_lossy(&self.s[start..self.pos]).into_owned(),
            self.col(start),
        ))
    }
    pub(crate) fn opts(&mut self) -> Result<Vec<Opt>> {
        let mut v = Vec::new();
        if self.peek() != Some(b'[') {
            return Ok(v);
        }
        self.pos += 1;
        loop {
            self.skip_ws();
            let kstart = self.pos;
            while self.pos < self.s.len()
                && (self.s[self.pos].is_ascii_alphanumeric() || self.s[self.pos] == b'_')
            {
                self.pos += 1;
            }
            if kstart == self.pos {
                return self.err(format!("expected an option key, found {}", self.describe()));
            }
            let key = String::from_utf8_lossy(&self.s[kstart..self.pos]).into_owned();
            let col = self.col(kstart);
            if self.peek() != Some(b'=') {
                return self.err(format!(
                    "expected '=' after option '{key}', found {}",
                    self.describe()
                ));
            }
            self.pos += 1;
            self.skip_ws();
            let vstart = self.pos;
            while self.pos < self.s.len()
                && !matches!(self.s[self.pos], b',' | b']' | b'[' | b'(' | b')')
                && !self.s[self.pos].is_ascii_whitespace()
            {
                self.pos += 1;
            }
            if vstart == self.pos {
                return self.err(format!("option '{key}' has no value"));
            }
            let value = String::from_utf8_lossy(&self.s[vstart..self.pos]).into_owned();
            if v.iter().any(|o: &Opt| o.key == key) {
                return Err(Error::Syntax {
                    col,
                    msg: format!("option '{key}' given twice"),
                });
            }
            v.push(Opt { key, value, col });
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(v);
                }
                _ => {
                    return self.err(format!(
                        "expected ',' or ']' in options, found {}",
                        self.describe()
                    ))
                }
            }
        }
    }
    /// An optional `COUNT *` before a device (1 without one).
    fn count(&mut self) -> Result<u32> {
        let mut p = self.pos;
        while p < self.s.len() && self.s[p].is_ascii_digit() {
            p += 1;
        }
        let mut q = p;
        while q < self.s.len() && self.s[q].is_ascii_whitespace() {
            q += 1;
        }
        if p == self.pos || self.s.get(q) != Some(&b'*') {
            return Ok(1);
        }
        let digits = String::from_utf8_lossy(&self.s[self.pos..p]).into_owned();
        let count = match digits.parse::<u32>() {
            Ok(n) if (1..=MAX_DEVICES).contains(&n) => n,
            _ => {
                return self.err(format!(
                    "count '{digits}' must be between 1 and {MAX_DEVICES}"
                ))
            }
        };
        self.pos = p;
        self.skip_ws();
        self.pos += 1; // '*'
        Ok(count)
    }

    pub(crate) fn node(&mut self) -> Result<Ast> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return self.err(format!("nesting deeper than {MAX_DEPTH} levels"));
        }
        self.skip_ws();
        let start = self.pos;
        let count = self.count()?;
        let (name, col) = self.word()?;
        let opts = self.opts()?;
        let node = if self.peek() == Some(b'(') {
            if count != 1 {
                return Err(Error::Syntax {
                    col: self.col(start),
                    msg: "a count ('N*') applies to devices, not to groups".into(),
                });
            }
            self.pos += 1;
            let mut children = vec![self.node()?];
            loop {
                match self.peek() {
                    Some(b',') => {
                        self.pos += 1;
                        children.push(self.node()?);
                    }
                    Some(b')') => {
                        self.pos += 1;
                        break;
                    }
                    _ => {
                        return self.err(format!("expected ',' or ')', found {}", self.describe()))
                    }
                }
            }
            Ast::Group {
                name,
                opts,
                children,
                col,
            }
        } else {
            Ast::Leaf {
                name,
                count,
                opts,
                col,
            }
        };
        self.depth -= 1;
        Ok(node)
    }
}

/// Parse an expression into its syntax tree. `#` starts a comment to end of line.
pub fn parse(expr: &str) -> Result<Ast> {
    if expr.len() > MAX_EXPR_BYTES {
        return Err(Error::Syntax {
            col: 1,
            msg: format!("expression longer than {} KiB", MAX_EXPR_BYTES >> 10),
        });
    }
    let mut p = Parser {
        s: expr.as_bytes(),
        pos: 0,
        depth: 0,
        col_cache: std::cell::Cell::new((0, 0)),
    };
    if p.peek().is_none() {
        return p.err("empty topology expression");
    }
    let ast = p.node()?;
    if p.peek().is_some() {
        return p.err(format!("unexpected {} after the expression", p.describe()));
    }
    Ok(ast)
}

/// An expression as the user wrote it, less its `#` comments and with its
/// lines joined: what results echo.
pub fn without_comments(expr: &str) -> String {
    expr.lines()
        .map(|l| l.split_once('#').map_or(l, |(code, _)| code))
        .flat_map(str::split_whitespace)
        .collect::<Vec<_>>()
        .join(" ")
}
