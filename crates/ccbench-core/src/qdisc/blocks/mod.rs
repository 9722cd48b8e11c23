//! Building blocks shared by several qdiscs.
pub mod cobalt_sce;
pub mod codel;
pub mod flow_hash;
pub mod pi;
pub mod sce;
pub mod overhead;
pub mod pie;
pub mod drr;
pub mod child;
pub mod stab;
pub mod token_bucket;
