//! The allocator of the `keyed-bench` binary: the system's, except that an allocation it
//! cannot satisfy ends the process with a one-line error and exit status 1, instead of
//! Rust's `memory allocation of N bytes failed` and an abort (SIGABRT, and a core dump where
//! they are enabled).
//!
//! Stable Rust has no hook for a failed allocation (`std::alloc::set_alloc_error_hook` is
//! unstable), so the check sits in the allocator: where [`System`] returns null, the
//! process writes its message from a buffer on the stack with `write(2)` and ends with
//! `_exit(1)`. Neither allocates, and `_exit` runs no destructor or exit handler that
//! could try to allocate again.
//!
//! The price: a caller that would handle a failed allocation itself (`Vec::try_reserve`)
//! never sees one; nothing the binary runs relies on that. Sizes are checked against the
//! memory available before anything is generated (`--max-memory-mib`), so this is the last
//! line, for what the estimate misses or memory that others took meanwhile.

use std::alloc::{GlobalAlloc, Layout, System};

/// [`System`], ending the process with a message where it cannot allocate.
#[derive(Debug)]
pub struct ExitWhenExhausted;

// SAFETY: every method forwards to `System` with the caller's arguments, so each upholds
// the contract `System` upholds; where `System` fails, the process ends instead of
// returning.
unsafe impl GlobalAlloc for ExitWhenExhausted {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract for `layout`.
        let block = unsafe { System.alloc(layout) };
        if block.is_null() {
            exhausted(layout.size());
        }
        block
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::alloc_zeroed`'s contract for `layout`.
        let block = unsafe { System.alloc_zeroed(layout) };
        if block.is_null() {
            exhausted(layout.size());
        }
        block
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        // SAFETY: `block` was allocated by `System` (through this allocator) with `layout`.
        unsafe { System.dealloc(block, layout) }
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::realloc`'s contract: `block` came from
        // this allocator (so from `System`) with `layout`, and `new_size` is valid for it.
        let moved = unsafe { System.realloc(block, layout, new_size) };
        if moved.is_null() {
            exhausted(new_size);
        }
        moved
    }
}

/// Says that `size` bytes could not be allocated, and ends the process with status 1,
/// allocating nothing.
fn exhausted(size: usize) -> ! {
    let mut line = Line::default();
    line.push(b"error: out of memory: cannot allocate ");
    line.push_number(size);
    line.push(
        b" bytes; lower the sizes (--messages, --pipeline-records, ...), or set \
          --max-memory-mib below what the machine can give\n",
    );
    let text = line.text();
    // SAFETY: `text` is a live, initialized buffer of `text.len()` bytes; `write` reads it
    // and allocates nothing. A short or failed write is let be: the process ends anyway.
    let _ = unsafe { libc::write(libc::STDERR_FILENO, text.as_ptr().cast(), text.len()) };
    // SAFETY: `_exit` ends the process at once; nothing after it runs.
    unsafe { libc::_exit(1) }
}

/// A line of text in a fixed buffer on the stack (what does not fit is cut).
struct Line {
    bytes: [u8; 256],
    len: usize,
}

impl Default for Line {
    fn default() -> Self {
        Self { bytes: [0; 256], len: 0 }
    }
}

impl Line {
    fn push(&mut self, text: &[u8]) {
        let room = self.bytes.len() - self.len;
        let taken = text.len().min(room);
        self.bytes[self.len..self.len + taken].copy_from_slice(&text[..taken]);
        self.len += taken;
    }

    /// `number` in decimal.
    fn push_number(&mut self, mut number: usize) {
        let mut digits = [0u8; 20];
        let mut start = digits.len();
        loop {
            start -= 1;
            digits[start] = b'0' + (number % 10) as u8;
            number /= 10;
            if number == 0 {
                break;
            }
        }
        self.push(&digits[start..]);
    }

    fn text(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_spells_the_size_in_decimal_and_cuts_what_does_not_fit() {
        let mut line = Line::default();
        line.push(b"n=");
        line.push_number(0);
        line.push(b",");
        line.push_number(usize::MAX);
        assert_eq!(line.text(), format!("n=0,{}", usize::MAX).as_bytes());
        line.push(&[b'x'; 300]);
        assert_eq!(line.text().len(), 256);
    }
}
