//! The part of Go's `regexp` (RE2) syntax that sysctl allowlist entries
//! use, matched as `regexp.MatchString` does: unanchored, `.` not matching
//! a newline, `^`/`$` only at the ends of the text.
//!
//! Supported: literals, `.`, `^`, `$`, `\A`, `\z`, classes `[a-z_]`,
//! `[^...]`, `\d \D \w \W \s \S` (ASCII, as in Go), escaped punctuation
//! (`\.`), `\t \n \r \f \v \a`, `\xHH`, `\x{H...}`, groups `(...)`,
//! `(?:...)`, `(?P<name>...)`, alternation `|` and repetition `* + ?
//! {n} {n,} {n,m}` (greedy or lazy). Anything else RE2 has (flags such as
//! `(?i)`, `\b`, `\p{...}`, `[[:alpha:]]`, `\Q...\E`) is refused with an
//! error naming it, never matched differently from Go. Syntax errors read
//! as Go's (`error parsing regexp: missing closing ): ...`).
//!
//! Matching is a Thompson NFA simulation: time linear in text × pattern,
//! so no entry can make ADD hang. The `regex` crate (the same RE2 syntax)
//! checks this module in a property test, as a dev-dependency only: it
//! would add several hundred kilobytes to a binary that needs a few lines
//! of pattern matching.

use std::fmt;

/// Go's limit on counted repetition (`{1000}` is the largest).
const MAX_REPEAT: u32 = 1000;
/// Program size past which a pattern is refused (Go refuses patterns that
/// expand too far too, with the same words).
const MAX_INSTS: usize = 20_000;

/// Why a pattern was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// Not a valid RE2 pattern; the text is Go's.
    Syntax(String),
    /// Valid RE2 that this subset does not implement.
    Unsupported(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Syntax(m) => write!(f, "error parsing regexp: {m}"),
            Error::Unsupported(what) => write!(
                f,
                "unsupported regexp syntax {what}: allowlist entries may use literals, \
                 classes, groups, alternation and repetition only"
            ),
        }
    }
}

/// A set of characters: sorted ranges, possibly negated.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Class {
    ranges: Vec<(char, char)>,
    negated: bool,
}

impl Class {
    fn one(c: char) -> Class {
        Class {
            ranges: vec![(c, c)],
            negated: false,
        }
    }

    fn matches(&self, c: char) -> bool {
        self.ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != self.negated
    }
}

#[derive(Debug, Clone)]
enum Node {
    Empty,
    Set(Class),
    Start,
    End,
    Concat(Vec<Node>),
    Alt(Vec<Node>),
    Repeat {
        node: Box<Node>,
        min: u32,
        max: Option<u32>,
    },
}

#[derive(Debug, Clone)]
enum Inst {
    Set(Class),
    Start,
    End,
    Split(usize, usize),
    Jmp(usize),
    Match,
}

/// A compiled pattern.
#[derive(Debug, Clone)]
pub struct Regex {
    prog: Vec<Inst>,
}

impl Regex {
    pub fn new(pattern: &str) -> Result<Regex, Error> {
        let mut p = Parser {
            chars: pattern.chars().collect(),
            pos: 0,
            whole: pattern,
        };
        let node = p.alternation(0)?;
        if p.pos < p.chars.len() {
            // Only an unbalanced `)` stops the top level early.
            return Err(syntax("unexpected )", pattern));
        }
        let mut prog = Vec::new();
        compile(&node, &mut prog)?;
        prog.push(Inst::Match);
        Ok(Regex { prog })
    }

    /// Whether the pattern matches anywhere in `text`.
    pub fn is_match(&self, text: &str) -> bool {
        let chars: Vec<char> = text.chars().collect();
        let n = self.prog.len();
        let mut current: Vec<usize> = Vec::with_capacity(n);
        let mut next: Vec<usize> = Vec::with_capacity(n);
        // Per-list generation marks: one allocation for the whole run.
        let mut seen = vec![usize::MAX; n];
        let mut stack = Vec::new();
        for pos in 0..=chars.len() {
            // A new thread at every position: the search is unanchored.
            let generation = pos * 2;
            let ctx = Step {
                pos,
                len: chars.len(),
                generation,
            };
            if self.add(&mut current, &mut seen, &mut stack, 0, &ctx) {
                return true;
            }
            let Some(&c) = chars.get(pos) else { break };
            let advanced = Step {
                pos: pos + 1,
                len: chars.len(),
                generation: generation + 1,
            };
            next.clear();
            for &pc in &current {
                if let Inst::Set(class) = &self.prog[pc]
                    && class.matches(c)
                    && self.add(&mut next, &mut seen, &mut stack, pc + 1, &advanced)
                {
                    return true;
                }
            }
            std::mem::swap(&mut current, &mut next);
            // The threads carried over keep their marks: re-mark them under
            // the next position's generation so the new thread does not
            // duplicate them.
            for &pc in &current {
                seen[pc] = generation + 2;
            }
        }
        false
    }

    /// Follow the empty transitions from `pc`, adding the character-reading
    /// instructions reached to `list`. True when `Match` is reached.
    fn add(
        &self,
        list: &mut Vec<usize>,
        seen: &mut [usize],
        stack: &mut Vec<usize>,
        pc: usize,
        at: &Step,
    ) -> bool {
        stack.clear();
        stack.push(pc);
        while let Some(pc) = stack.pop() {
            if seen[pc] == at.generation {
                continue;
            }
            seen[pc] = at.generation;
            match &self.prog[pc] {
                Inst::Match => return true,
                Inst::Set(_) => list.push(pc),
                Inst::Start if at.pos == 0 => stack.push(pc + 1),
                Inst::End if at.pos == at.len => stack.push(pc + 1),
                Inst::Start | Inst::End => {}
                Inst::Jmp(to) => stack.push(*to),
                Inst::Split(a, b) => {
                    stack.push(*b);
                    stack.push(*a);
                }
            }
        }
        false
    }
}

struct Step {
    pos: usize,
    len: usize,
    generation: usize,
}

fn syntax(code: &str, arg: &str) -> Error {
    Error::Syntax(format!("{code}: `{arg}`"))
}

struct Parser<'a> {
    chars: Vec<char>,
    pos: usize,
    whole: &'a str,
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, n: usize) -> Option<char> {
        self.chars.get(self.pos + n).copied()
    }

    fn rest(&self, from: usize) -> String {
        self.chars[from..].iter().collect()
    }

    fn alternation(&mut self, depth: usize) -> Result<Node, Error> {
        let mut alts = vec![self.concat(depth)?];
        while self.peek() == Some('|') {
            self.pos += 1;
            alts.push(self.concat(depth)?);
        }
        Ok(if alts.len() == 1 {
            alts.pop().unwrap_or(Node::Empty)
        } else {
            Node::Alt(alts)
        })
    }

    fn concat(&mut self, depth: usize) -> Result<Node, Error> {
        let mut items = Vec::new();
        while let Some(c) = self.peek() {
            match c {
                '|' => break,
                ')' if depth > 0 => break,
                ')' => return Err(syntax("unexpected )", self.whole)),
                _ => {}
            }
            let atom = self.atom(depth)?;
            items.push(self.repetitions(atom)?);
        }
        Ok(Node::Concat(items))
    }

    fn atom(&mut self, depth: usize) -> Result<Node, Error> {
        let start = self.pos;
        let c = self.peek().unwrap_or_default();
        self.pos += 1;
        Ok(match c {
            '(' => self.group(start, depth)?,
            '[' => Node::Set(self.class(start)?),
            '.' => Node::Set(Class {
                ranges: vec![('\n', '\n')],
                negated: true,
            }),
            '^' => Node::Start,
            '$' => Node::End,
            '\\' => self.escape(false)?,
            '*' | '+' | '?' => {
                return Err(syntax(
                    "missing argument to repetition operator",
                    &c.to_string(),
                ));
            }
            '{' => {
                self.pos = start;
                if let Some((_, _, text)) = self.counted()? {
                    return Err(syntax("missing argument to repetition operator", &text));
                }
                self.pos = start + 1;
                Node::Set(Class::one('{'))
            }
            c => Node::Set(Class::one(c)),
        })
    }

    fn group(&mut self, start: usize, depth: usize) -> Result<Node, Error> {
        if self.peek() == Some('?') {
            match (self.peek_at(1), self.peek_at(2)) {
                (Some(':'), _) => self.pos += 2,
                (Some('P'), Some('<')) | (Some('<'), _) => {
                    let skip = if self.peek_at(1) == Some('P') { 3 } else { 2 };
                    let name_start = self.pos + skip;
                    let end = self.chars[name_start..]
                        .iter()
                        .position(|&c| c == '>')
                        .map(|i| name_start + i);
                    let valid = end.is_some_and(|e| {
                        e > name_start
                            && self.chars[name_start..e]
                                .iter()
                                .all(|c| c.is_ascii_alphanumeric() || *c == '_')
                    });
                    match end {
                        Some(e) if valid => self.pos = e + 1,
                        _ => {
                            let text = self.rest(start);
                            return Err(syntax("invalid named capture", &text));
                        }
                    }
                }
                _ => {
                    let end = self.chars[self.pos..]
                        .iter()
                        .position(|&c| c == ')' || c == ':')
                        .map_or(self.chars.len(), |i| self.pos + i + 1);
                    let flags: String = self.chars[start..end].iter().collect();
                    return Err(Error::Unsupported(format!("`{flags}` (flags)")));
                }
            }
        }
        let inner = self.alternation(depth + 1)?;
        if self.peek() != Some(')') {
            return Err(syntax("missing closing )", self.whole));
        }
        self.pos += 1;
        Ok(inner)
    }

    /// Postfix operators after an atom.
    fn repetitions(&mut self, mut node: Node) -> Result<Node, Error> {
        let mut last: Option<usize> = None;
        loop {
            let start = self.pos;
            let (min, max) = match self.peek() {
                Some('*') => (0, None),
                Some('+') => (1, None),
                Some('?') => (0, Some(1)),
                Some('{') => match self.counted()? {
                    Some((min, max, _)) => {
                        self.pos -= 1;
                        (min, max)
                    }
                    None => return Ok(node),
                },
                _ => return Ok(node),
            };
            self.pos += 1;
            // A lazy marker changes what is captured, not whether it matches.
            if self.peek() == Some('?') {
                self.pos += 1;
            }
            if let Some(prev) = last {
                let text = self.chars[prev..self.pos].iter().collect::<String>();
                return Err(syntax("invalid nested repetition operator", &text));
            }
            last = Some(start);
            node = Node::Repeat {
                node: Box::new(node),
                min,
                max,
            };
        }
    }

    /// `{n}`, `{n,}` or `{n,m}` at the current position, consumed. `None`
    /// (nothing consumed) when the brace does not start one: Go then reads
    /// `{` as a literal.
    #[allow(clippy::type_complexity)]
    fn counted(&mut self) -> Result<Option<(u32, Option<u32>, String)>, Error> {
        let start = self.pos;
        let Some(close) = self.chars[start..].iter().position(|&c| c == '}') else {
            return Ok(None);
        };
        let inner: String = self.chars[start + 1..start + close].iter().collect();
        let text: String = self.chars[start..=start + close].iter().collect();
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        let (min, max) = match inner.split_once(',') {
            None if digits(&inner) => (inner.clone(), Some(inner.clone())),
            Some((a, "")) if digits(a) => (a.to_string(), None),
            Some((a, b)) if digits(a) && digits(b) => (a.to_string(), Some(b.to_string())),
            _ => return Ok(None),
        };
        let bad = || syntax("invalid repeat count", &text);
        let min: u32 = min.parse().map_err(|_| bad())?;
        let max = max
            .map(|m| m.parse::<u32>())
            .transpose()
            .map_err(|_| bad())?;
        if min > MAX_REPEAT || max.is_some_and(|m| m > MAX_REPEAT || m < min) {
            return Err(bad());
        }
        self.pos = start + close + 1;
        Ok(Some((min, max, text)))
    }

    /// After a `\`: a class, an anchor or one character.
    fn escape(&mut self, in_class: bool) -> Result<Node, Error> {
        let Some(c) = self.peek() else {
            return Err(syntax("trailing backslash at end of expression", ""));
        };
        self.pos += 1;
        let perl = |ranges: &[(char, char)], negated: bool| {
            Node::Set(Class {
                ranges: ranges.to_vec(),
                negated,
            })
        };
        const DIGIT: &[(char, char)] = &[('0', '9')];
        const WORD: &[(char, char)] = &[('0', '9'), ('A', 'Z'), ('_', '_'), ('a', 'z')];
        const SPACE: &[(char, char)] = &[('\t', '\n'), ('\x0c', '\r'), (' ', ' ')];
        Ok(match c {
            'd' => perl(DIGIT, false),
            'D' => perl(DIGIT, true),
            'w' => perl(WORD, false),
            'W' => perl(WORD, true),
            's' => perl(SPACE, false),
            'S' => perl(SPACE, true),
            'A' if !in_class => Node::Start,
            'z' if !in_class => Node::End,
            't' => Node::Set(Class::one('\t')),
            'n' => Node::Set(Class::one('\n')),
            'r' => Node::Set(Class::one('\r')),
            'f' => Node::Set(Class::one('\x0c')),
            'v' => Node::Set(Class::one('\x0b')),
            'a' => Node::Set(Class::one('\x07')),
            'x' => Node::Set(Class::one(self.hex()?)),
            'b' | 'B' | 'p' | 'P' | 'Q' | 'E' | 'C' | 'A' | 'z' | '0'..='7' => {
                return Err(Error::Unsupported(format!("`\\{c}`")));
            }
            c if c.is_ascii_punctuation() => Node::Set(Class::one(c)),
            c => {
                return Err(syntax("invalid escape sequence", &format!("\\{c}")));
            }
        })
    }

    /// The digits after `\x`: two, or any number in braces.
    fn hex(&mut self) -> Result<char, Error> {
        let start = self.pos - 2;
        let digits: String = if self.peek() == Some('{') {
            let Some(end) = self.chars[self.pos..].iter().position(|&c| c == '}') else {
                return Err(syntax("invalid escape sequence", &self.rest(start)));
            };
            let d = self.chars[self.pos + 1..self.pos + end].iter().collect();
            self.pos += end + 1;
            d
        } else {
            let d: String = self.chars[self.pos..].iter().take(2).collect();
            self.pos += d.chars().count();
            d
        };
        let text: String = self.chars[start..self.pos].iter().collect();
        let bad = || syntax("invalid escape sequence", &text);
        if digits.is_empty() || (!text.contains('{') && digits.chars().count() != 2) {
            return Err(bad());
        }
        u32::from_str_radix(&digits, 16)
            .ok()
            .and_then(char::from_u32)
            .ok_or_else(bad)
    }

    /// After `[`: the class up to its `]`.
    fn class(&mut self, start: usize) -> Result<Class, Error> {
        let missing = |p: &Parser| syntax("missing closing ]", &p.rest(start));
        let negated = self.peek() == Some('^');
        if negated {
            self.pos += 1;
        }
        let mut ranges = Vec::new();
        let mut first = true;
        loop {
            let Some(c) = self.peek() else {
                return Err(missing(self));
            };
            if c == ']' && !first {
                self.pos += 1;
                break;
            }
            first = false;
            if c == '[' && self.peek_at(1) == Some(':') {
                let end = self.chars[self.pos..]
                    .iter()
                    .position(|&c| c == ']')
                    .map_or(self.chars.len(), |i| self.pos + i + 1);
                let text: String = self.chars[self.pos..end].iter().collect();
                return Err(Error::Unsupported(format!("`{text}` (named class)")));
            }
            let item_start = self.pos;
            let lo = self.class_item()?;
            let lo = match lo {
                Node::Set(set) if single(&set) => set.ranges[0].0,
                Node::Set(set) => {
                    // `\d` and friends inside a class; a negated one (`\D`)
                    // adds its complement.
                    ranges.extend(complement_if(&set));
                    continue;
                }
                _ => return Err(missing(self)),
            };
            if self.peek() == Some('-') && self.peek_at(1).is_some_and(|c| c != ']') {
                self.pos += 1;
                let hi = match self.class_item()? {
                    Node::Set(set) if single(&set) => set.ranges[0].0,
                    _ => {
                        let text: String = self.chars[item_start..self.pos].iter().collect();
                        return Err(syntax("invalid character class range", &text));
                    }
                };
                if hi < lo {
                    let text: String = self.chars[item_start..self.pos].iter().collect();
                    return Err(syntax("invalid character class range", &text));
                }
                ranges.push((lo, hi));
            } else {
                ranges.push((lo, lo));
            }
        }
        ranges.sort_unstable();
        Ok(Class { ranges, negated })
    }

    fn class_item(&mut self) -> Result<Node, Error> {
        match self.peek() {
            None => Err(syntax("missing closing ]", "")),
            Some('\\') => {
                self.pos += 1;
                self.escape(true)
            }
            Some(c) => {
                self.pos += 1;
                Ok(Node::Set(Class::one(c)))
            }
        }
    }
}

/// Whether `set` is one character (a range bound may be one).
fn single(set: &Class) -> bool {
    !set.negated && set.ranges.len() == 1 && set.ranges[0].0 == set.ranges[0].1
}

/// The ranges of `set` as a non-negated list (perl classes are ASCII, so
/// no bound falls next to the surrogate gap).
fn complement_if(set: &Class) -> Vec<(char, char)> {
    if !set.negated {
        return set.ranges.clone();
    }
    let mut out = Vec::new();
    let mut next = '\0';
    let mut open = true;
    for &(lo, hi) in &set.ranges {
        if lo > next
            && let Some(before) = char::from_u32(lo as u32 - 1)
        {
            out.push((next, before));
        }
        match char::from_u32(hi as u32 + 1) {
            Some(after) => next = after,
            None => {
                open = false;
                break;
            }
        }
    }
    if open {
        out.push((next, char::MAX));
    }
    out
}

fn compile(node: &Node, prog: &mut Vec<Inst>) -> Result<(), Error> {
    if prog.len() > MAX_INSTS {
        return Err(Error::Syntax("expression too large".into()));
    }
    match node {
        Node::Empty => {}
        Node::Set(c) => prog.push(Inst::Set(c.clone())),
        Node::Start => prog.push(Inst::Start),
        Node::End => prog.push(Inst::End),
        Node::Concat(items) => {
            for n in items {
                compile(n, prog)?;
            }
        }
        Node::Alt(alts) => {
            let mut jumps = Vec::new();
            for (i, n) in alts.iter().enumerate() {
                if i + 1 == alts.len() {
                    compile(n, prog)?;
                    break;
                }
                let split = prog.len();
                prog.push(Inst::Split(split + 1, 0));
                compile(n, prog)?;
                jumps.push(prog.len());
                prog.push(Inst::Jmp(0));
                let next = prog.len();
                prog[split] = Inst::Split(split + 1, next);
            }
            let end = prog.len();
            for j in jumps {
                prog[j] = Inst::Jmp(end);
            }
        }
        Node::Repeat { node, min, max } => {
            for _ in 0..*min {
                compile(node, prog)?;
            }
            match max {
                None => {
                    // x*: L: split(body, out); body; jmp L
                    let split = prog.len();
                    prog.push(Inst::Split(split + 1, 0));
                    compile(node, prog)?;
                    prog.push(Inst::Jmp(split));
                    let out = prog.len();
                    prog[split] = Inst::Split(split + 1, out);
                }
                Some(max) => {
                    // Each optional copy may be skipped to the very end.
                    let mut splits = Vec::new();
                    for _ in *min..*max {
                        splits.push(prog.len());
                        prog.push(Inst::Split(prog.len() + 1, 0));
                        compile(node, prog)?;
                        if prog.len() > MAX_INSTS {
                            return Err(Error::Syntax("expression too large".into()));
                        }
                    }
                    let out = prog.len();
                    for s in splits {
                        prog[s] = Inst::Split(s + 1, out);
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
