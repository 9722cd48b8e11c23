//! STUB: the PI controller block (RFC 9332 / RFC 8033).
