//! The binary's own modules (not part of the library): the commands that
//! print rather than serve.

pub(crate) mod config;
pub(crate) mod inspect;
pub(crate) mod lock;
pub(crate) mod oci;
pub(crate) mod tenant;
