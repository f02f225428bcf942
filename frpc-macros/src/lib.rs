//! Proc macros for frpc (land in a following change).
#![deny(missing_docs)]
