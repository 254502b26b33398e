//! `shmbench tune`: the fastest DataLoader settings (workers, prefetch, pin_memory, start method)
//! that fit a /dev/shm budget, found by measurement (docs/TUNE.md). The model prunes what cannot
//! fit even when training stalls ([`setting`]), short trials screen the rest one knob at a time
//! ([`screen`]) and race the few close to the best with more runs, and the pick must also pass below the budget, so that a
//! neighbour's segment or a timing does not tip it over ([`search`]). A trial is one real cell
//! ([`trial`]); the search's logic runs on any trial function, a fake in its tests. The
//! exhaustive [`grid`] is what a search is checked against (`tune --validate`).

pub mod candidate;
#[cfg(test)]
mod fake;
pub mod grid;
pub mod grid_text;
pub mod pick_text;
pub mod screen;
pub mod search;
pub mod setting;
pub mod trial;
pub mod trials;
