//! RFC 6570 URI templates, as far as resource templates use them: simple
//! (`{id}`) and reserved (`{+path}`, `{#frag}`) expressions between literal
//! text.
//!
//! Every string is a template: text outside `{...}` must match literally
//! (an unclosed `{` is literal too); a simple variable matches one or more
//! characters other than `/`, a reserved one one or more of any.
//!
//! [`UriTemplate::captures`] runs a Pike VM over the URI's bytes: each byte
//! is looked at once by at most one thread per program step, so matching
//! takes time linear in the URI for a given template (a backtracking matcher
//! is exponential in adjacent variables). When a URI matches in several
//! ways, each variable, left to right, takes the shortest value that lets
//! the rest match.

/// One piece of a template, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Text that must appear as is.
    Literal(String),
    /// A variable.
    Variable {
        /// Its name, without the operator.
        name: String,
        /// Whether its value may contain `/` (`{+x}` and `{#x}`).
        reserved: bool,
    },
}

/// A parsed URI template.
#[derive(Debug, Clone)]
pub struct UriTemplate {
    parts: Vec<Part>,
    program: Vec<Inst>,
    /// The variables' names, in template order.
    names: Vec<String>,
}

/// One instruction of the matching program.
#[derive(Debug, Clone, Copy)]
enum Inst {
    /// Consume this byte.
    Byte(u8),
    /// Consume any byte (any but `/` unless `reserved`).
    Any { reserved: bool },
    /// Go on at both, preferring the first.
    Split(usize, usize),
    /// Go on only at a character boundary.
    Boundary,
    /// Record the position in this slot.
    Save(usize),
    /// The whole template matched.
    Match,
}

impl UriTemplate {
    /// Parses `template`.
    pub fn parse(template: &str) -> Self {
        let parts = parse_parts(template);
        let mut program = Vec::new();
        let mut names = Vec::new();
        for part in &parts {
            match part {
                Part::Literal(text) => program.extend(text.bytes().map(Inst::Byte)),
                Part::Variable { name, reserved } => {
                    let slot = 2 * names.len();
                    names.push(name.clone());
                    // One byte, then (preferably) leave at a character
                    // boundary or take one more.
                    program.push(Inst::Save(slot));
                    let any = program.len();
                    program.push(Inst::Any {
                        reserved: *reserved,
                    });
                    program.push(Inst::Split(any + 2, any));
                    program.push(Inst::Boundary);
                    program.push(Inst::Save(slot + 1));
                }
            }
        }
        program.push(Inst::Match);
        UriTemplate {
            parts,
            program,
            names,
        }
    }

    /// The template's pieces, in order.
    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    /// Whether `uri` is one of the URIs the template names.
    pub fn matches(&self, uri: &str) -> bool {
        self.captures(uri).is_some()
    }

    /// The variables' values in `uri`, in template order, as `(name,
    /// value)`, if `uri` is one of the URIs the template names. Values are
    /// as they appear in the URI (not percent-decoded).
    pub fn captures<'u>(&self, uri: &'u str) -> Option<Vec<(&str, &'u str)>> {
        let slots = self.run(uri)?;
        Some(
            self.names
                .iter()
                .enumerate()
                .map(|(i, name)| (name.as_str(), &uri[slots[2 * i]..slots[2 * i + 1]]))
                .collect(),
        )
    }

    /// The Pike VM: the slots of the highest-priority thread that reaches
    /// `Match` at the end of `uri`.
    fn run(&self, uri: &str) -> Option<Vec<usize>> {
        let width = 2 * self.names.len();
        let mut now = Threads::new(width);
        let mut next = Threads::new(width);
        let mut seen = Seen::new(self.program.len());
        let mut scratch = vec![0; width];
        let bytes = uri.as_bytes();
        self.add(&mut now, &mut seen, 0, 0, uri, &mut scratch);
        for pos in 0..=bytes.len() {
            if now.pcs.is_empty() {
                return None;
            }
            next.clear();
            seen.next_step();
            for i in 0..now.pcs.len() {
                let pc = now.pcs[i];
                let consumed = match self.program[pc] {
                    Inst::Match if pos == bytes.len() => return Some(now.slots(i).to_vec()),
                    Inst::Byte(b) => bytes.get(pos) == Some(&b),
                    Inst::Any { reserved } => {
                        bytes.get(pos).is_some_and(|&b| reserved || b != b'/')
                    }
                    _ => false,
                };
                if consumed {
                    scratch.copy_from_slice(now.slots(i));
                    self.add(&mut next, &mut seen, pc + 1, pos + 1, uri, &mut scratch);
                }
            }
            std::mem::swap(&mut now, &mut next);
        }
        None
    }

    /// Follows the instructions that consume nothing from `pc` and adds the
    /// threads they lead to, in priority order; a program step already seen
    /// at this position keeps its earlier (higher-priority) thread.
    fn add(
        &self,
        threads: &mut Threads,
        seen: &mut Seen,
        pc: usize,
        pos: usize,
        uri: &str,
        slots: &mut [usize],
    ) {
        if !seen.first_time(pc) {
            return;
        }
        match self.program[pc] {
            Inst::Split(first, second) => {
                self.add(threads, seen, first, pos, uri, slots);
                self.add(threads, seen, second, pos, uri, slots);
            }
            Inst::Boundary => {
                if uri.is_char_boundary(pos) {
                    self.add(threads, seen, pc + 1, pos, uri, slots);
                }
            }
            Inst::Save(slot) => {
                let old = std::mem::replace(&mut slots[slot], pos);
                self.add(threads, seen, pc + 1, pos, uri, slots);
                slots[slot] = old;
            }
            Inst::Byte(_) | Inst::Any { .. } | Inst::Match => threads.push(pc, slots),
        }
    }
}

/// The threads alive at one position, in priority order, each with its
/// slots.
struct Threads {
    pcs: Vec<usize>,
    slots: Vec<usize>,
    width: usize,
}

impl Threads {
    fn new(width: usize) -> Self {
        Threads {
            pcs: Vec::new(),
            slots: Vec::new(),
            width,
        }
    }

    fn clear(&mut self) {
        self.pcs.clear();
        self.slots.clear();
    }

    fn push(&mut self, pc: usize, slots: &[usize]) {
        self.pcs.push(pc);
        self.slots.extend_from_slice(slots);
    }

    fn slots(&self, i: usize) -> &[usize] {
        &self.slots[i * self.width..(i + 1) * self.width]
    }
}

/// The program steps already reached at the current position.
struct Seen {
    step: Vec<u64>,
    now: u64,
}

impl Seen {
    fn new(steps: usize) -> Self {
        Seen {
            step: vec![0; steps],
            now: 1,
        }
    }

    fn next_step(&mut self) {
        self.now += 1;
    }

    /// Marks `pc` seen; whether it was not yet.
    fn first_time(&mut self, pc: usize) -> bool {
        std::mem::replace(&mut self.step[pc], self.now) != self.now
    }
}

fn parse_parts(template: &str) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(len) = rest[open..].find('}') else {
            break;
        };
        if open > 0 {
            parts.push(Part::Literal(rest[..open].to_owned()));
        }
        let expr = &rest[open + 1..open + len];
        let (reserved, name) = match expr.strip_prefix(['+', '#']) {
            Some(name) => (true, name),
            None => (false, expr),
        };
        parts.push(Part::Variable {
            name: name.to_owned(),
            reserved,
        });
        rest = &rest[open + len + 1..];
    }
    if !rest.is_empty() {
        parts.push(Part::Literal(rest.to_owned()));
    }
    parts
}

#[cfg(test)]
mod tests;
