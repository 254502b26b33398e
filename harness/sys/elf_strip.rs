//! A copy of this binary without its DWARF debug info, for what ships it elsewhere (the Docker
//! image, a VM's initramfs): the release binary is built with debug info (backtraces on the
//! host name files and lines), most of its 66 MB, which no container or guest needs.
//!
//! ELF64 little-endian only. The copy keeps everything the loader maps byte for byte (the file
//! up to the end of the last segment), then the non-allocated sections other than `.debug_*`
//! (the symbol table stays, so backtraces in a container still name functions), then the
//! section header table. Every section keeps its index, so nothing that refers to one (symbols,
//! links) changes: a debug section becomes empty. Anything unexpected (another ELF class, a
//! debug section inside a segment) gives the input back unchanged.

/// `binary` without its `.debug_*` sections' contents; `binary` itself when it cannot tell.
pub fn without_debug_info(binary: &[u8]) -> Vec<u8> {
    strip(binary).unwrap_or_else(|| binary.to_vec())
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

const SHT_NOBITS: u32 = 8;
const SHF_ALLOC: u64 = 2;
const SECTION_HEADER: usize = 64;

struct Section {
    header: usize,
    kind: u32,
    flags: u64,
    offset: u64,
    size: u64,
    align: u64,
    name: Vec<u8>,
}

fn sections(b: &[u8]) -> Option<Vec<Section>> {
    let shoff = u64_at(b, 0x28)? as usize;
    let (entsize, count) = (u16_at(b, 0x3a)? as usize, u16_at(b, 0x3c)? as usize);
    let names_index = u16_at(b, 0x3e)? as usize;
    if entsize != SECTION_HEADER || count == 0 {
        return None;
    }
    let at = |i: usize| shoff + i * SECTION_HEADER;
    let names_offset = u64_at(b, at(names_index) + 0x18)? as usize;
    (0..count)
        .map(|i| {
            let h = at(i);
            let name_at = names_offset + u32_at(b, h)? as usize;
            let name = b.get(name_at..)?.split(|c| *c == 0).next()?.to_vec();
            Some(Section {
                header: h,
                kind: u32_at(b, h + 4)?,
                flags: u64_at(b, h + 8)?,
                offset: u64_at(b, h + 0x18)?,
                size: u64_at(b, h + 0x20)?,
                align: u64_at(b, h + 0x30)?.max(1),
                name,
            })
        })
        .collect()
}

fn strip(b: &[u8]) -> Option<Vec<u8>> {
    // ELF magic, 64-bit, little-endian.
    if b.get(..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let (phoff, phentsize, phnum) = (
        u64_at(b, 0x20)? as usize,
        u16_at(b, 0x36)? as usize,
        u16_at(b, 0x38)? as usize,
    );
    let mut mapped_end = 0u64;
    for i in 0..phnum {
        let p = phoff + i * phentsize;
        mapped_end = mapped_end.max(u64_at(b, p + 8)? + u64_at(b, p + 0x20)?);
    }
    let sections = sections(b)?;
    for s in sections
        .iter()
        .filter(|s| s.flags & SHF_ALLOC != 0 && s.kind != SHT_NOBITS)
    {
        mapped_end = mapped_end.max(s.offset + s.size);
    }
    let is_debug = |s: &Section| s.name.starts_with(b".debug") && s.flags & SHF_ALLOC == 0;
    // Only non-allocated sections after everything mapped may move.
    let movable: Vec<&Section> = sections
        .iter()
        .filter(|s| s.flags & SHF_ALLOC == 0 && s.kind != SHT_NOBITS && s.size > 0)
        .collect();
    if movable.iter().any(|s| s.offset < mapped_end) || !movable.iter().any(|s| is_debug(s)) {
        return None;
    }
    let mut out = b.get(..mapped_end as usize)?.to_vec();
    let mut headers = b
        .get(u64_at(b, 0x28)? as usize..)?
        .get(..sections.len() * SECTION_HEADER)?
        .to_vec();
    let mut order: Vec<&Section> = movable.clone();
    order.sort_by_key(|s| s.offset);
    for s in order {
        let local = s.header - u64_at(b, 0x28)? as usize;
        if is_debug(s) {
            headers[local + 0x18..local + 0x20].copy_from_slice(&(out.len() as u64).to_le_bytes());
            headers[local + 0x20..local + 0x28].copy_from_slice(&0u64.to_le_bytes());
            continue;
        }
        out.resize(out.len().next_multiple_of(s.align as usize), 0);
        headers[local + 0x18..local + 0x20].copy_from_slice(&(out.len() as u64).to_le_bytes());
        out.extend_from_slice(b.get(s.offset as usize..(s.offset + s.size) as usize)?);
    }
    out.resize(out.len().next_multiple_of(8), 0);
    let shoff = out.len() as u64;
    out.extend_from_slice(&headers);
    out[0x28..0x30].copy_from_slice(&shoff.to_le_bytes());
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_test_binary_loses_its_debug_info_and_keeps_its_symbols() {
        let me = std::fs::read("/proc/self/exe").unwrap();
        let stripped = without_debug_info(&me);
        assert!(stripped.len() <= me.len());
        let kept = sections(&stripped).unwrap();
        // `.debug_gdb_scripts` is loaded with the program: it stays.
        assert!(kept
            .iter()
            .filter(|s| s.name.starts_with(b".debug") && s.flags & SHF_ALLOC == 0)
            .all(|s| s.size == 0));
        assert!(kept.iter().any(|s| s.name == b".symtab" && s.size > 0));
        assert_eq!(kept.len(), sections(&me).unwrap().len(), "indices kept");
    }

    #[test]
    fn what_it_cannot_read_comes_back_unchanged() {
        assert_eq!(without_debug_info(b"#!/bin/sh\n"), b"#!/bin/sh\n");
        assert_eq!(without_debug_info(b"\x7fELF\x02\x01"), b"\x7fELF\x02\x01");
    }
}
