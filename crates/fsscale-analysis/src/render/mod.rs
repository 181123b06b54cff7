//! What every renderer draws with: HTML built from escaped parts, aligned
//! text tables, flame graphs, and the short phrases and number formats the
//! tables share. Below the instruments and the reports, which both use it.

pub mod flame;
pub mod format;
pub mod markup;
pub mod phrases;
pub mod table;
