//! The binary's own modules (not part of the library): the commands that
//! print rather than serve.

pub mod config;
pub mod inspect;
pub mod oci;
pub mod tenant;
