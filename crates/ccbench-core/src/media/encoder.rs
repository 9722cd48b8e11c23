//! STUB: video encoder model (replaced by the full model).
